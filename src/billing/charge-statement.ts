/**
 * How a paid call reaches `charge_call` (src/db/functions/charge_call.sql): its arguments
 * built in one place, for both call sites. The batch is the billing hot path's one exception
 * to the query builder: raw text with positional parameters, sent as a prepared statement
 * (drizzle's builder cost ~30% client-side there; bench/README.md). The idempotent path runs a
 * single call inside its own transaction through drizzle.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Limits } from "../config.ts";
import { mytDay, mytMonth } from "../clock.ts";
import { lowBalanceThreshold } from "./tokens.ts";

/** One paid call to charge: the caller's key hash and the moment of the call. */
export interface ChargeRequest {
  keyHash: string;
  now: number;
}

/** The per-call arguments of charge_call, in its parameter order. */
function callArguments(call: ChargeRequest) {
  return { keyHash: call.keyHash, at: new Date(call.now).toISOString(), day: mytDay(call.now), month: mytMonth(call.now) };
}

/** The limit arguments of charge_call, in its parameter order. */
function limitArguments(limits: Limits) {
  return { dailyCap: limits.dailyCap, grant: limits.monthlyGrant, lowThreshold: lowBalanceThreshold(limits) };
}

/** One call as a statement (for a caller that runs it in its own transaction). */
export function chargeCallStatement(call: ChargeRequest, limits: Limits): SQL {
  const c = callArguments(call);
  const l = limitArguments(limits);
  return sql`SELECT * FROM charge_call(${c.keyHash}, ${c.at}::timestamptz, ${c.day}::date, ${c.month}::date, ${l.dailyCap}::integer, ${l.grant}::bigint, ${l.lowThreshold}::bigint)`;
}

// The attempt row is written by the same statement (so it commits exactly when the charges do);
// a data-modifying CTE runs whether or not the outer query reads it.
const CHARGE_BATCH_SQL = `
  WITH r AS MATERIALIZED (
    SELECT k.ord, c.*
      FROM unnest($1::text[], $2::timestamptz[], $3::date[], $4::date[]) WITH ORDINALITY AS k(key_hash, at, day, month, ord)
     CROSS JOIN LATERAL charge_call(k.key_hash, k.at, k.day, k.month, $5::integer, $6::bigint, $7::bigint) AS c),
  attempt AS (
    INSERT INTO charge_attempts (id, results) SELECT $8::uuid, jsonb_agg(to_jsonb(r) ORDER BY r.ord) FROM r)
  SELECT * FROM r ORDER BY ord`;

/** A group of calls (already in lock order) as one prepared statement under an attempt id. */
export function chargeBatchStatement(calls: readonly ChargeRequest[], limits: Limits, attemptId: string): { text: string; params: unknown[] } {
  const args = calls.map(callArguments);
  const l = limitArguments(limits);
  return {
    text: CHARGE_BATCH_SQL,
    params: [args.map((a) => a.keyHash), args.map((a) => a.at), args.map((a) => a.day), args.map((a) => a.month), l.dailyCap, l.grant, l.lowThreshold, attemptId],
  };
}
