/**
 * Addresses an account has signed in from. An address that signed in to the account before is
 * let through the email's slow-down and the per-address budget: strangers
 * guessing at an email cannot keep its member out. Only a hash of (account, address) is kept.
 */
import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import type { DbHandle } from "../../db/client.ts";

const addressHash = (accountId: number, address: string) =>
  createHash("sha256").update(`${accountId}:${address}`, "utf8").digest("hex");

/** True when the account has signed in from this address (as clientAddress gives it) before. */
export async function isKnownAddress(handle: DbHandle, accountId: number, address: string): Promise<boolean> {
  const rows = await handle.rows(
    sql`SELECT 1 FROM known_sign_in_addresses WHERE account_id = ${accountId}
      AND address_hash = ${addressHash(accountId, address)}`,
  );
  return rows.length > 0;
}

/** Records a successful sign-in from this address. */
export async function rememberAddress(
  handle: DbHandle,
  accountId: number,
  address: string,
  now: number,
): Promise<void> {
  const at = new Date(now).toISOString();
  await handle.rows(sql`
    INSERT INTO known_sign_in_addresses (account_id, address_hash, last_sign_in_at) VALUES (${accountId},
    ${addressHash(accountId, address)}, ${at}::timestamptz)
    ON CONFLICT (account_id, address_hash) DO UPDATE SET last_sign_in_at = excluded.last_sign_in_at`);
}
