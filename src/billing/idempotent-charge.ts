/**
 * Paid calls with an Idempotency-Key. The charge, the building of the answer and the storing of
 * that answer are ONE transaction, so a charge never exists without its stored answer. A retry
 * within 24 h finds the committed answer and gets it back without a charge.
 *
 * Two copies racing (even on different processes): both charge inside their own transaction,
 * serialised by the account row lock; the second's insert of the answer finds the first's row,
 * so it rolls back (its charge with it) and replays the first answer. Exactly one charge.
 */
import { sql } from "drizzle-orm";
import type { Limits } from "../config.ts";
import { type DbHandle, resultRows } from "../db/client.ts";
import { type ChargeResult, type ChargeRow, toResult } from "./charge.ts";
import { chargeCallStatement } from "./charge-statement.ts";

/** How long a stored answer is replayed. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

export type IdempotentOutcome =
  | { kind: "charged"; result: ChargeResult; response: Uint8Array }
  | { kind: "refused"; result: ChargeResult }
  | { kind: "replayed"; response: Uint8Array }
  /** The key was used for a different request (other symbols or timeframe). */
  | { kind: "mismatch" };

export interface IdempotentCall {
  keyHash: string;
  /** As ChargeRequest.known: a store ahead of these versions refuses the call as 'behind', uncharged. */
  known?: Readonly<Record<string, number>> | null;
  idempotencyKey: string;
  /** The normalised request; a replay must be for the same one. */
  fingerprint: string;
  now: number;
  /** Builds the serialized answer for a charged call (memory only; cannot fail). */
  build(result: ChargeResult): Uint8Array;
}

/** Thrown inside the transaction to roll it back without an error reaching the caller. */
class Rollback {
  readonly reason: "refused" | "raced";
  readonly result: ChargeResult | null;
  constructor(reason: "refused" | "raced", result: ChargeResult | null) {
    this.reason = reason;
    this.result = result;
  }
}

interface StoredRow {
  fingerprint: string;
  response: Uint8Array;
}

/** The committed answer for this key and idempotency key, if still within the window. */
async function findStored(handle: DbHandle, call: IdempotentCall): Promise<StoredRow | null> {
  const since = new Date(call.now - IDEMPOTENCY_WINDOW_MS).toISOString();
  const [row] = await handle.rows<StoredRow>(sql`
    SELECT c.fingerprint, c.response
      FROM idempotent_calls c
     WHERE c.key_hash = ${call.keyHash} AND c.idempotency_key = ${call.idempotencyKey}
     AND c.created_at > ${since}::timestamptz
       -- A regenerated key must not read the old key's answers.
       AND EXISTS (SELECT 1 FROM api_keys k WHERE k.key_hash = c.key_hash AND k.revoked_at IS NULL)`);
  return row ? { fingerprint: row.fingerprint, response: new Uint8Array(row.response) } : null;
}

function replay(row: StoredRow, call: IdempotentCall): IdempotentOutcome {
  return row.fingerprint === call.fingerprint ? { kind: "replayed", response: row.response } : { kind: "mismatch" };
}

export async function chargeIdempotent(
  handle: DbHandle,
  call: IdempotentCall,
  limits: Limits,
): Promise<IdempotentOutcome> {
  const stored = await findStored(handle, call);
  if (stored) return replay(stored, call);
  try {
    return await handle.db.transaction(async (tx) => {
      const [row] = resultRows<ChargeRow>(await tx.execute(chargeCallStatement(call, limits)));
      const result = toResult(row!);
      if (result.outcome !== "ok") throw new Rollback("refused", result);
      const response = call.build(result);
      const now = new Date(call.now).toISOString();
      const since = new Date(call.now - IDEMPOTENCY_WINDOW_MS).toISOString();
      // Waits for a racing copy's transaction; finds its row if it committed (then we roll back).
      const inserted = resultRows(
        await tx.execute(sql`
          INSERT INTO idempotent_calls (key_hash, idempotency_key, fingerprint, response, created_at)
          VALUES (${call.keyHash}, ${call.idempotencyKey}, ${call.fingerprint}, ${Buffer.from(response)},
          ${now}::timestamptz)
          ON CONFLICT (key_hash, idempotency_key) DO UPDATE
             SET fingerprint = excluded.fingerprint, response = excluded.response, created_at = excluded.created_at
           WHERE idempotent_calls.created_at <= ${since}::timestamptz
          RETURNING 1`),
      );
      if (inserted.length === 0) throw new Rollback("raced", null);
      return { kind: "charged", result, response } as const;
    });
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
    // A copy that raced us may have committed meanwhile (and may have spent the last Token):
    // its answer is the answer.
    const winner = await findStored(handle, call);
    if (winner) return replay(winner, call);
    if (err.reason === "refused") return { kind: "refused", result: err.result! };
    throw new Error("idempotent call lost a race but no stored answer was found");
  }
}

/** Deletes stored answers older than the window (run periodically; any process may). */
export async function purgeExpiredIdempotentCalls(handle: DbHandle, now: number): Promise<number> {
  const rows = await handle.rows(
    sql`DELETE FROM idempotent_calls WHERE created_at <=
      ${new Date(now - IDEMPOTENCY_WINDOW_MS).toISOString()}::timestamptz RETURNING 1`,
  );
  return rows.length;
}
