/**
 * The pace limit of the pages that show the current signal (a paid plan's chart pages): they
 * cost no Token, like an alert, so they are held to what a person reading charts does, and are
 * no unmetered API. Two budgets, both in fixed windows kept in Postgres so every server process
 * shares them: views per web session per minute, and views per account per MYT day over all
 * its sessions (signing in again does not buy a fresh budget). Each view is counted in both with
 * one statement (an upsert of two rows, row locks make the counts exact under concurrency); a
 * refused view is counted too, so reloading a refused page does not help, and since the windows
 * are fixed it never pushes a wait past the window's end.
 */
import { sql } from "drizzle-orm";
import { nextMytMidnight } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 3_600_000;

export interface PageViewLimits {
  /** Views per web session in one minute (fixed windows aligned to the minute). */
  readonly perSessionPerMinute: number;
  /** Views per account in one MYT calendar day, over all its sessions. */
  readonly perAccountPerDay: number;
}

export type PageViewVerdict =
  | { readonly ok: true }
  /** `retryAfterMs`: until the window that is full ends. */
  | { readonly ok: false; readonly budget: "session" | "account"; readonly retryAfterMs: number };

/** Counts one view of a current-signal page by this session and account, and says whether it may be shown. */
export async function countPageView(
  handle: DbHandle,
  viewer: { sessionHash: string; accountId: number },
  limits: PageViewLimits,
  now: number,
): Promise<PageViewVerdict> {
  const minuteStart = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  const dayEnd = nextMytMidnight(now);
  const sessionKey = `session:${viewer.sessionHash}`;
  const accountKey = `account:${viewer.accountId}`;
  // Same key order in every statement (session, then account): two views never wait on each other in a cycle.
  const rows = await handle.rows<{ view_key: string; views: number }>(sql`
    INSERT INTO page_view_windows AS w (view_key, window_start, views)
    VALUES (${sessionKey}, ${new Date(minuteStart).toISOString()}::timestamptz, 1),
           (${accountKey}, ${new Date(dayEnd - DAY_MS).toISOString()}::timestamptz, 1)
    ON CONFLICT (view_key) DO UPDATE
       SET views = CASE WHEN excluded.window_start > w.window_start THEN 1 ELSE w.views + 1 END,
           window_start = greatest(w.window_start, excluded.window_start)
    RETURNING w.view_key, w.views`);
  const views = (key: string) => Number(rows.find((r) => r.view_key === key)?.views ?? 0);
  if (views(accountKey) > limits.perAccountPerDay) return { ok: false, budget: "account", retryAfterMs: dayEnd - now };
  if (views(sessionKey) > limits.perSessionPerMinute)
    return { ok: false, budget: "session", retryAfterMs: minuteStart + MINUTE_MS - now };
  return { ok: true };
}

/** Deletes windows that ended more than a day ago (the server's purge timer). */
export async function purgePageViewWindows(handle: DbHandle, now: number): Promise<number> {
  const rows = await handle.rows(
    sql`DELETE FROM page_view_windows WHERE window_start < ${new Date(now - 2 * DAY_MS).toISOString()}::timestamptz
      RETURNING 1`,
  );
  return rows.length;
}
