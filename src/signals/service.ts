/**
 * SignalsService, written once and served over REST, Connect, gRPC and gRPC-Web.
 * Order of work: key present → key well-formed → one charge_call round trip (key, plan,
 * subscription, credits, daily cap, charge) → read the in-memory snapshot. The charge comes
 * first so a refused call costs nothing and a charged call can no longer fail.
 */
import { errorSummary } from "../logger.ts";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  ArmingSchema,
  GetSignalsResponseSchema,
  Signal,
  SignalEntrySchema,
  type SignalEntry,
  type SignalsService,
} from "../../gen/signals/v1/signals_pb.js";
import type { DbHandle } from "../db/client.ts";
import type { Limits } from "../config.ts";
import type { Clock } from "../clock.ts";
import { nextMytMidnight } from "../clock.ts";
import { hashApiKey, isWellFormedApiKey } from "../accounts/api-key.ts";
import { createChargeBatcher, type ChargeResult, type Charger } from "../billing/charge.ts";
import { serviceError } from "../errors.ts";
import { isWellFormedSymbol, normaliseSymbols, normaliseTimeframe, type Timeframe } from "./request.ts";
import type { SignalName, SignalReading, SignalSnapshot } from "./snapshot.ts";

export const API_KEY_HEADER = "x-api-key";
export const BILLING_TEXT = "1 energy credit per call (node / founding seats only)";
export const TIER_NAME = "node";

export interface SignalsServiceDeps {
  readonly db: DbHandle;
  readonly limits: Limits;
  readonly clock: Clock;
  readonly snapshot: SignalSnapshot;
  readonly logger: Logger;
}

const SIGNAL_ENUM: Record<SignalName, Signal> = {
  NONE: Signal.NONE,
  LONG: Signal.LONG,
  STRONG_LONG: Signal.STRONG_LONG,
  SHORT: Signal.SHORT,
  STRONG_SHORT: Signal.STRONG_SHORT,
};

/** IETF RateLimit headers for the daily cap (delta-seconds until 00:00 MYT). */
export function rateLimitHeaders(limits: Limits, callsToday: number, now: number): Record<string, string> {
  const resetSeconds = Math.max(1, Math.ceil((nextMytMidnight(now) - now) / 1000));
  return {
    "ratelimit-limit": String(limits.dailyCap),
    "ratelimit-remaining": String(Math.max(0, limits.dailyCap - callsToday)),
    "ratelimit-reset": String(resetSeconds),
  };
}

function entryFor(symbol: string, tf: Timeframe, snapshot: SignalSnapshot, now: number): SignalEntry {
  if (!isWellFormedSymbol(symbol)) return create(SignalEntrySchema, { symbol, tf, ok: false, reason: "invalid_symbol" });
  const found = snapshot.lookup(symbol, tf, now);
  if (!found.ok) return create(SignalEntrySchema, { symbol, tf, ok: false, reason: found.reason });
  return readingEntry(symbol, tf, found.reading);
}

function readingEntry(symbol: string, tf: Timeframe, r: SignalReading): SignalEntry {
  return create(SignalEntrySchema, {
    symbol,
    tf,
    ok: true,
    price: r.price,
    signal: SIGNAL_ENUM[r.signal],
    confirmed: r.confirmed,
    defense: r.defense ?? undefined,
    arming: r.arming ? create(ArmingSchema, r.arming) : undefined,
    atrPct: r.atrPct,
    signalId: r.signalId ?? undefined,
  });
}

async function charge(deps: SignalsServiceDeps, charger: Charger, ctx: HandlerContext, now: number): Promise<ChargeResult> {
  const key = ctx.requestHeader.get(API_KEY_HEADER)?.trim() ?? "";
  if (key === "") throw serviceError("api_key_required");
  if (!isWellFormedApiKey(key)) throw serviceError("invalid_api_key");
  let result: ChargeResult;
  try {
    result = await charger(hashApiKey(key), now);
  } catch (cause) {
    deps.logger.error({ err: errorSummary(cause) }, "charge_call failed");
    throw serviceError("unavailable");
  }
  const headers = result.callsToday === null ? undefined : rateLimitHeaders(deps.limits, result.callsToday, now);
  if (result.outcome !== "ok") {
    const extra = result.outcome === "rate_limited" && headers ? { ...headers, "retry-after": headers["ratelimit-reset"]! } : headers;
    throw serviceError(result.outcome, undefined, extra);
  }
  for (const [name, value] of Object.entries(headers ?? {})) ctx.responseHeader.set(name, value);
  return result;
}

/** Builds the service implementation over its dependencies. */
export function createSignalsService(deps: SignalsServiceDeps): ServiceImpl<typeof SignalsService> {
  const charger = createChargeBatcher(deps.db, deps.limits);
  return {
    async getSignals(request, ctx) {
      const now = deps.clock();
      const charged = await charge(deps, charger, ctx, now);
      const tf = normaliseTimeframe(request.tf);
      const symbols = normaliseSymbols(request.symbols, deps.limits.maxSymbols);
      return create(GetSignalsResponseSchema, {
        ok: true,
        tf,
        ts: BigInt(now),
        signals: symbols.map((symbol) => entryFor(symbol, tf, deps.snapshot, now)),
        tier: TIER_NAME,
        billing: BILLING_TEXT,
        creditsLeft: BigInt(charged.creditsLeft ?? 0),
      });
    },
  };
}
