/**
 * How a paid call reaches `charge_call` (src/db/functions/charge_call.sql): its arguments
 * built in one place, for both call sites. The batch is the billing hot path's one exception
 * to the query builder: raw text with positional parameters, sent as a prepared statement
 * (drizzle's builder cost ~30% client-side there; bench/README.md). The idempotent path runs a
 * single call inside its own transaction through drizzle.
 */
import { type SQL, sql } from "drizzle-orm";
import { mytDay, mytMonth } from "../clock.ts";
import type { Limits } from "../config.ts";
import { lowBalanceThreshold } from "./tokens.ts";

/** Market versions per coin (`coins.version`). */
export type KnownVersions = Readonly<Record<string, number>>;

/** One paid call to charge: the caller's key hash and the moment of the call. */
export interface ChargeRequest {
  keyHash: string;
  now: number;
  /**
   * The market version of each requested coin that the answering process's readings are at.
   * When the store holds a newer one for any of them, nothing is charged: the outcome is
   * 'behind', with the store's versions of those coins. Absent: no such check.
   */
  known?: KnownVersions | null;
}

/** The per-call arguments of charge_call, in its parameter order, and the versions to check. */
function callArguments(call: ChargeRequest) {
  const known = call.known ? JSON.stringify(call.known) : null;
  return {
    keyHash: call.keyHash,
    at: new Date(call.now).toISOString(),
    day: mytDay(call.now),
    month: mytMonth(call.now),
    known,
  };
}

/**
 * The coins (of a call's known versions, a jsonb value) whose stored version is newer, as one
 * jsonb object `market`, or NULL when none is (a NULL `known` has no entries): read in the
 * charge's own statement, so it costs no round trip, and sees every market transaction
 * committed before the call began. Each known coin is one primary-key look-up. `known` must be
 * jsonb already (parsed once): the former form filtered every row of `coins` with a text-to-jsonb
 * cast, so each call parsed its JSON once per coin the market holds (400 at issue 28's scale,
 * 1.65 ms a call in EXPLAIN ANALYZE; bench/README.md, "Run 11").
 */
const behindMarket = (known: string) => `
    SELECT jsonb_object_agg(m.symbol, m.version) AS market FROM coins m
     WHERE m.symbol = ANY (ARRAY(SELECT jsonb_object_keys(${known})))
       AND m.version > (${known} ->> m.symbol)::bigint`;

/** charge_call with these arguments unless `b.market` says the process is behind; then 'behind', nothing charged. */
const chargeUnlessBehind = (args: string) => `
    SELECT * FROM charge_call(${args}) WHERE b.market IS NULL
    UNION ALL
    SELECT 'behind'::text, NULL::bigint, NULL::text, NULL::bigint, NULL::integer, false WHERE b.market IS NOT NULL`;

/** The limit arguments of charge_call, in its parameter order. */
function limitArguments(limits: Limits) {
  return { dailyCap: limits.dailyCap, grant: limits.monthlyGrant, lowThreshold: lowBalanceThreshold(limits) };
}

const ONE_CALL_ARGUMENTS = "$1, $2::timestamptz, $3::date, $4::date, $5::integer, $6::bigint, $7::bigint";
const CHARGE_CALL_SQL = `
  SELECT c.*, b.market
    FROM (${behindMarket("$8::jsonb")}) b
   CROSS JOIN LATERAL (${chargeUnlessBehind(ONE_CALL_ARGUMENTS)}) c`;

/** Raw text with positional parameters as a drizzle SQL (the same text as the batch's, for a transaction). */
function positional(text: string, params: readonly unknown[]): SQL {
  const parts = text.split(/\$(\d+)/);
  return sql.join(parts.map((part, i) => (i % 2 === 0 ? sql.raw(part) : sql.param(params[Number(part) - 1]))));
}

/** One call as a statement (for a caller that runs it in its own transaction). */
export function chargeCallStatement(call: ChargeRequest, limits: Limits): SQL {
  const c = callArguments(call);
  const l = limitArguments(limits);
  return positional(CHARGE_CALL_SQL, [c.keyHash, c.at, c.day, c.month, l.dailyCap, l.grant, l.lowThreshold, c.known]);
}

// The attempt row is written by the same statement (so it commits exactly when the charges do);
// a data-modifying CTE runs whether or not the outer query reads it.
const CHARGE_BATCH_SQL = `
  WITH r AS MATERIALIZED (
    SELECT k.ord, c.*, b.market
      FROM unnest($1::text[], $2::timestamptz[], $3::date[], $4::date[], $9::text[]::jsonb[])
           WITH ORDINALITY AS k(key_hash, at, day, month, known, ord)
     CROSS JOIN LATERAL (${behindMarket("k.known")}) b
     CROSS JOIN LATERAL (${chargeUnlessBehind("k.key_hash, k.at, k.day, k.month, $5::integer, $6::bigint, $7::bigint")})
     c),
  attempt AS (
    INSERT INTO charge_attempts (id, results) SELECT $8::uuid, jsonb_agg(to_jsonb(r) ORDER BY r.ord) FROM r)
  SELECT * FROM r ORDER BY ord`;

/** A group of calls (already in lock order) as one prepared statement under an attempt id. */
export function chargeBatchStatement(
  calls: readonly ChargeRequest[],
  limits: Limits,
  attemptId: string,
): { text: string; params: unknown[] } {
  const args = calls.map(callArguments);
  const l = limitArguments(limits);
  return {
    text: CHARGE_BATCH_SQL,
    params: [
      args.map((a) => a.keyHash),
      args.map((a) => a.at),
      args.map((a) => a.day),
      args.map((a) => a.month),
      l.dailyCap,
      l.grant,
      l.lowThreshold,
      attemptId,
      args.map((a) => a.known),
    ],
  };
}
