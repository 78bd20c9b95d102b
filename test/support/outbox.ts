/** Outbox helpers for tests. */
import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "drizzle-orm";
import type { DbHandle } from "../../src/db/client.ts";

/** Waits until no outbox row is pending or leased, or the timeout passes. */
export async function waitForOutboxIdle(db: DbHandle, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await db.rows<{ n: number | string }>(
      sql`SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`,
    );
    if (Number(row?.n ?? 0) === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}
