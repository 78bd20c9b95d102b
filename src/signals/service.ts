/**
 * SignalsService, written once and served over REST, Connect, gRPC and gRPC-Web behind the
 * API-key guard (accounts/api-key-guard.ts: failed-key budget of the caller's address → key
 * present → key well-formed). Order of work here: Idempotency-Key well-formed → one charge_call round trip (key, plan,
 * subscription, Tokens, daily cap, charge) → read the in-memory snapshot. The charge comes first so a refused call
 * costs nothing and a charged call can no longer fail. With an Idempotency-Key the charge and
 * the stored answer are one transaction (billing/idempotent-charge.ts).
 *
 * The charge statement also compares the market versions of the requested coins that this
 * process's snapshot is at with the store's; when the store is ahead (another process committed
 * a close this one has not loaded yet), nothing is charged, the snapshot catches up, and the
 * charge runs again, all within `catchUpMs`; past it the call is 503 with Retry-After, uncharged.
 */

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  ArmingSchema,
  type GetSignalsResponse,
  GetSignalsResponseSchema,
  Signal,
  type SignalEntry,
  SignalEntrySchema,
  type SignalsService,
} from "../../gen/signals/v1/signals_pb.js";
import { callerKey } from "../accounts/api-key-guard.ts";
import { type ChargeResult, createChargeBatcher } from "../billing/charge.ts";
import { chargeIdempotent } from "../billing/idempotent-charge.ts";
import type { Clock } from "../clock.ts";
import { nextMytMidnight } from "../clock.ts";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import type { MarketVersions, SignalName, SignalReading, SignalSnapshot } from "../market/snapshot.ts";
import { isWellFormedSymbol } from "../market/symbols.ts";
import type { Timeframe } from "../market/timeframes.ts";
import type { Metrics } from "../observability/metrics.ts";
import { rateLimitedHeaders, rateLimitHeaders } from "./rate-limit-headers.ts";
import { readSignalsRequest, type SignalsRequestRead } from "./request.ts";
import { setCallWarnings } from "./warnings.ts";

export const BILLING_TEXT = "1 energy credit per call (node / founding seats only)";
/** The plan a paid call is served under (the contract names its field `tier`). */
export const PLAN_NAME = "node";

export interface SignalsServiceDeps {
  readonly db: DbHandle;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly snapshot: SignalSnapshot;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /**
   * Charge statements in flight at once (default 8). Keep it below the connection pool size:
   * the driver pipelines queries beyond the pool and lets those waiting for a connection
   * starve while the others keep it busy, and a transaction's BEGIN pipelined behind another
   * query fails (postgres.js 3.4.9).
   */
  readonly maxChargesInFlight?: number;
  /** How long a charge waits for other calls to share its statement (ms; absent: BatcherOptions.groupWaitMs). */
  readonly chargeGroupWaitMs?: number;
  /** How long a charge whose outcome is open may take to resolve before the call gets 503 (ms; default 10 s). */
  readonly chargeResolveMs?: number;
  /** How long a call may wait for the snapshot to catch up with the store (ms; default 1000). */
  readonly catchUpMs?: number;
}

const SIGNAL_ENUM: Record<SignalName, Signal> = {
  NONE: Signal.NONE,
  LONG: Signal.LONG,
  STRONG_LONG: Signal.STRONG_LONG,
  SHORT: Signal.SHORT,
  STRONG_SHORT: Signal.STRONG_SHORT,
};

/** IETF RateLimit headers for the daily cap (delta-seconds until 00:00 MYT). */
export function dailyCapHeaders(limits: Limits, callsToday: number, now: number): Record<string, string> {
  return rateLimitHeaders(limits.dailyCap, callsToday, nextMytMidnight(now) - now);
}

function entryFor(
  symbol: string,
  tf: Timeframe,
  snapshot: SignalSnapshot,
  now: number,
  built: WeakMap<SignalReading, SignalEntry>,
): SignalEntry {
  if (!isWellFormedSymbol(symbol))
    return create(SignalEntrySchema, { symbol, tf, ok: false, reason: "invalid_symbol" });
  const found = snapshot.lookup(symbol, tf, now);
  if (!found.ok) return create(SignalEntrySchema, { symbol, tf, ok: false, reason: found.reason });
  // A published reading is never changed (a new one replaces it), so neither is its entry: built
  // once and frozen, it is shared by every answer until then, and REST writes its text once.
  const known = built.get(found.reading);
  if (known !== undefined && known.symbol === symbol && known.tf === tf) return known;
  const entry = readingEntry(symbol, tf, found.reading);
  built.set(found.reading, entry);
  return entry;
}

/** A reading's entry, frozen (nested arming included): it may be shared by many answers. */
function readingEntry(symbol: string, tf: Timeframe, r: SignalReading): SignalEntry {
  return Object.freeze(
    create(SignalEntrySchema, {
      symbol,
      tf,
      ok: true,
      price: r.price,
      signal: SIGNAL_ENUM[r.signal],
      confirmed: r.confirmed,
      defense: r.defense ?? undefined,
      arming: r.arming ? Object.freeze(create(ArmingSchema, r.arming)) : undefined,
      atrPct: r.atrPct,
      signalId: r.signalId ?? undefined,
      demo: r.demo === true,
    }),
  );
}

/** Request header (gRPC metadata) that makes a retried call return the first answer, uncharged. */
export const IDEMPOTENCY_HEADER = "idempotency-key";
/** Response header set on an answer replayed for an Idempotency-Key. */
export const REPLAYED_HEADER = "idempotent-replayed";
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

function idempotencyKeyOf(ctx: HandlerContext): string | null {
  const raw = ctx.requestHeader.get(IDEMPOTENCY_HEADER);
  if (raw === null) return null;
  const key = raw.trim();
  if (!IDEMPOTENCY_KEY_PATTERN.test(key))
    throw serviceError("bad_request", "Idempotency-Key must be 1 to 255 visible ASCII characters.");
  return key;
}

/** Turns a charge outcome into the call's headers, or into the contract's error. */
function applyChargeOutcome(
  deps: SignalsServiceDeps,
  ctx: HandlerContext,
  result: ChargeResult,
  now: number,
): ChargeResult {
  const headers = result.callsToday === null ? undefined : dailyCapHeaders(deps.limits, result.callsToday, now);
  if (result.outcome === "behind")
    throw new Error("unreachable: a call behind the store is caught up before its charge outcome is applied");
  if (result.outcome !== "ok") {
    const extra = result.outcome === "rate_limited" && headers ? rateLimitedHeaders(headers) : headers;
    throw serviceError(result.outcome, undefined, extra);
  }
  for (const [name, value] of Object.entries(headers ?? {})) ctx.responseHeader.set(name, value);
  return result;
}

/** Seconds a caller is told to wait when this process could not catch up with the store in time. */
const CATCH_UP_RETRY_AFTER = "1";

/**
 * Runs a charge with the versions the snapshot is at for these coins; while the store is ahead
 * (`behind` gives its versions), catches the snapshot up and runs it again, until the deadline.
 * Never answers from a snapshot older than the store was when the charge ran.
 */
async function atCurrentMarket<T>(
  snapshot: SignalSnapshot,
  symbols: readonly string[],
  catchUpMs: number,
  charge: (known: MarketVersions | null) => Promise<T>,
  behind: (outcome: T) => MarketVersions | null,
): Promise<T> {
  const coins = symbols.filter(isWellFormedSymbol);
  if (!snapshot.versions || !snapshot.catchUp || coins.length === 0) return charge(null);
  const deadline = Date.now() + catchUpMs;
  for (;;) {
    const outcome = await charge(snapshot.versions(coins));
    const wanted = behind(outcome);
    if (wanted === null) return outcome;
    if (!(await snapshot.catchUp(wanted, deadline))) {
      throw serviceError(
        "unavailable",
        "This server process could not load the latest market data in time; retry shortly.",
        { "retry-after": CATCH_UP_RETRY_AFTER },
      );
    }
  }
}

function unavailable(deps: SignalsServiceDeps, cause: unknown): never {
  deps.logger.error({ err: errorSummary(cause) }, "charge_call failed");
  throw serviceError("unavailable");
}

/** Builds the service implementation over its dependencies. */
export function createSignalsService(deps: SignalsServiceDeps): ServiceImpl<typeof SignalsService> {
  const charger = createChargeBatcher(deps.db, deps.limits, {
    logger: deps.logger,
    ...(deps.maxChargesInFlight ? { maxInFlight: deps.maxChargesInFlight } : {}),
    ...(deps.chargeGroupWaitMs ? { groupWaitMs: deps.chargeGroupWaitMs } : {}),
    ...(deps.chargeResolveMs ? { resolveWithinMs: deps.chargeResolveMs } : {}),
  });
  const built = new WeakMap<SignalReading, SignalEntry>();
  const respond = (tf: Timeframe, symbols: string[], now: number, charged: ChargeResult): GetSignalsResponse =>
    create(GetSignalsResponseSchema, {
      ok: true,
      tf,
      ts: BigInt(now),
      signals: symbols.map((symbol) => entryFor(symbol, tf, deps.snapshot, now, built)),
      tier: PLAN_NAME,
      billing: BILLING_TEXT,
      creditsLeft: BigInt(charged.tokensLeft ?? 0),
    });
  const { metrics } = deps;
  const catchUpMs = deps.catchUpMs ?? 1000;
  const timed = <T>(path: string, charge: Promise<T>): Promise<T> => {
    if (!metrics) return charge;
    const stop = metrics.chargeSeconds.startTimer({ path });
    metrics.chargesInFlight.inc();
    return charge.finally(() => {
      stop();
      metrics.chargesInFlight.dec();
    });
  };

  async function getSignals(
    { tf, symbols }: SignalsRequestRead,
    ctx: HandlerContext,
    keyHash: string,
  ): Promise<GetSignalsResponse> {
    const now = deps.clock();
    const idempotencyKey = idempotencyKeyOf(ctx);
    if (idempotencyKey === null) {
      const result = await atCurrentMarket(
        deps.snapshot,
        symbols,
        catchUpMs,
        (known) =>
          timed("grouped", charger(keyHash, now, ctx.signal, known)).catch((cause: unknown) =>
            unavailable(deps, cause),
          ),
        (r) => (r.outcome === "behind" ? r.market : null),
      );
      return respond(tf, symbols, now, applyChargeOutcome(deps, ctx, result, now));
    }
    const call = (known: MarketVersions | null) =>
      chargeIdempotent(
        deps.db,
        {
          keyHash,
          known,
          idempotencyKey,
          fingerprint: `${tf}|${symbols.join(",")}`,
          now,
          build: (charged) => toBinary(GetSignalsResponseSchema, respond(tf, symbols, now, charged)),
        },
        deps.limits,
      );
    const outcome = await atCurrentMarket(
      deps.snapshot,
      symbols,
      catchUpMs,
      (known) => timed("idempotent", call(known)).catch((cause: unknown) => unavailable(deps, cause)),
      (o) => (o.kind === "refused" && o.result.outcome === "behind" ? o.result.market : null),
    );
    switch (outcome.kind) {
      case "mismatch":
        throw serviceError("idempotency_key_reused");
      case "refused":
        applyChargeOutcome(deps, ctx, outcome.result, now);
        throw new Error("unreachable: a refused charge's outcome is an error");
      case "replayed":
        ctx.responseHeader.set(REPLAYED_HEADER, "true");
        return fromBinary(GetSignalsResponseSchema, outcome.response);
      case "charged":
        applyChargeOutcome(deps, ctx, outcome.result, now);
        return fromBinary(GetSignalsResponseSchema, outcome.response);
    }
  }

  return {
    async getSignals(request, ctx) {
      const key = callerKey(ctx);
      const read = readSignalsRequest(request.symbols, request.tf, deps.limits.maxSymbols);
      const response = await getSignals(read, ctx, key.hash);
      // Charged as the contract says; what it quietly changed is told in x-signals-warnings.
      setCallWarnings(ctx.responseHeader, read, response.signals);
      key.accepted(deps.clock());
      return response;
    },
  };
}
