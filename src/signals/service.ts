/**
 * SignalsService, written once and served over REST, Connect, gRPC and gRPC-Web.
 * Order of work: key present → key well-formed → one charge_call round trip (key, plan,
 * subscription, credits, daily cap, charge) → read the in-memory snapshot. The charge comes
 * first so a refused call costs nothing and a charged call can no longer fail.
 */
import { errorSummary } from "../logger.ts";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  ArmingSchema,
  GetSignalsResponseSchema,
  Signal,
  type GetSignalsResponse,
  SignalEntrySchema,
  type SignalEntry,
  type SignalsService,
} from "../../gen/signals/v1/signals_pb.js";
import type { DbHandle } from "../db/client.ts";
import type { Limits } from "../config.ts";
import type { Clock } from "../clock.ts";
import { nextMytMidnight } from "../clock.ts";
import { hashApiKey, isWellFormedApiKey } from "../accounts/api-key.ts";
import { createChargeBatcher, type ChargeResult } from "../billing/charge.ts";
import { chargeIdempotent } from "../billing/idempotent-charge.ts";
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

/** Request header (gRPC metadata) that makes a retried call return the first answer, uncharged. */
export const IDEMPOTENCY_HEADER = "idempotency-key";
/** Response header set on an answer replayed for an Idempotency-Key. */
export const REPLAYED_HEADER = "idempotent-replayed";
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The caller's key after the local checks (present, well-formed), in the contract's order. */
function apiKeyOf(ctx: HandlerContext): string {
  const key = ctx.requestHeader.get(API_KEY_HEADER)?.trim() ?? "";
  if (key === "") throw serviceError("api_key_required");
  if (!isWellFormedApiKey(key)) throw serviceError("invalid_api_key");
  return key;
}

function idempotencyKeyOf(ctx: HandlerContext): string | null {
  const raw = ctx.requestHeader.get(IDEMPOTENCY_HEADER);
  if (raw === null) return null;
  const key = raw.trim();
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw serviceError("bad_request", "Idempotency-Key must be 1 to 255 visible ASCII characters.");
  return key;
}

/** Turns a charge outcome into the call's headers, or into the contract's error. */
function settle(deps: SignalsServiceDeps, ctx: HandlerContext, result: ChargeResult, now: number): ChargeResult {
  const headers = result.callsToday === null ? undefined : rateLimitHeaders(deps.limits, result.callsToday, now);
  if (result.outcome !== "ok") {
    const extra = result.outcome === "rate_limited" && headers ? { ...headers, "retry-after": headers["ratelimit-reset"]! } : headers;
    throw serviceError(result.outcome, undefined, extra);
  }
  for (const [name, value] of Object.entries(headers ?? {})) ctx.responseHeader.set(name, value);
  return result;
}

function unavailable(deps: SignalsServiceDeps, cause: unknown): never {
  deps.logger.error({ err: errorSummary(cause) }, "charge_call failed");
  throw serviceError("unavailable");
}

/** Builds the service implementation over its dependencies. */
export function createSignalsService(deps: SignalsServiceDeps): ServiceImpl<typeof SignalsService> {
  const charger = createChargeBatcher(deps.db, deps.limits);
  const respond = (tf: Timeframe, symbols: string[], now: number, charged: ChargeResult): GetSignalsResponse =>
    create(GetSignalsResponseSchema, {
      ok: true,
      tf,
      ts: BigInt(now),
      signals: symbols.map((symbol) => entryFor(symbol, tf, deps.snapshot, now)),
      tier: TIER_NAME,
      billing: BILLING_TEXT,
      creditsLeft: BigInt(charged.creditsLeft ?? 0),
    });
  return {
    async getSignals(request, ctx) {
      const now = deps.clock();
      const key = apiKeyOf(ctx);
      const idempotencyKey = idempotencyKeyOf(ctx);
      const tf = normaliseTimeframe(request.tf);
      const symbols = normaliseSymbols(request.symbols, deps.limits.maxSymbols);
      if (idempotencyKey === null) {
        const result = await charger(hashApiKey(key), now).catch((cause: unknown) => unavailable(deps, cause));
        return respond(tf, symbols, now, settle(deps, ctx, result, now));
      }
      const outcome = await chargeIdempotent(
        deps.db,
        {
          keyHash: hashApiKey(key),
          idempotencyKey,
          fingerprint: `${tf}|${symbols.join(",")}`,
          now,
          build: (charged) => toBinary(GetSignalsResponseSchema, respond(tf, symbols, now, charged)),
        },
        deps.limits,
      ).catch((cause: unknown) => unavailable(deps, cause));
      switch (outcome.kind) {
        case "mismatch":
          throw serviceError("idempotency_key_reused");
        case "refused":
          settle(deps, ctx, outcome.result, now);
          throw new Error("unreachable: a refused charge settles as an error");
        case "replayed":
          ctx.responseHeader.set(REPLAYED_HEADER, "true");
          return fromBinary(GetSignalsResponseSchema, outcome.response);
        case "charged":
          settle(deps, ctx, outcome.result, now);
          return fromBinary(GetSignalsResponseSchema, outcome.response);
      }
    },
  };
}
