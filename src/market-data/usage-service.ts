/**
 * UsageService (GET /api/v1/usage): the caller's balance and limits, free. Order of work, as
 * for the free endpoints, after the API-key guard (accounts/api-key-guard.ts): ONE round trip (free_call access check +
 * the account read) → the
 * RateLimit headers → the answer. Never charged, never counted toward the daily cap.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { type GetUsageResponse, GetUsageResponseSchema, type UsageService } from "../../gen/signals/v1/usage_pb.js";
import { callerKey } from "../accounts/api-key-guard.ts";
import { type Clock, mytIso, nextMytMidnight, nextMytMonthStart } from "../clock.ts";
import type { Limits } from "../config.ts";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { admitFreeCall, FREE_WINDOW_MS } from "./free-call.ts";
import { readUsage, type UsageRead } from "./usage.ts";

export interface UsageServiceDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly limits: Limits;
  /** Free calls per API key per minute (the free endpoints' budget, shared). */
  readonly freeRateLimit: number;
}

/** Builds the service implementation over its dependencies. */
export function createUsageService(deps: UsageServiceDeps): ServiceImpl<typeof UsageService> {
  return {
    async getUsage(_request: unknown, ctx: HandlerContext): Promise<GetUsageResponse> {
      const key = callerKey(ctx);
      const now = deps.clock();
      let read: UsageRead;
      try {
        read = await readUsage(deps.db, key.hash, now, deps.freeRateLimit, FREE_WINDOW_MS, deps.limits.monthlyGrant);
      } catch (cause) {
        deps.logger.error({ err: errorSummary(cause) }, "usage query failed");
        throw serviceError("unavailable");
      }
      admitFreeCall(ctx, read.access, deps.freeRateLimit, now, FREE_WINDOW_MS);
      key.accepted(now);
      // Admitted, but the key was regenerated between the check and the read (same statement).
      if (read.usage === null) throw serviceError("invalid_api_key");
      const u = read.usage;
      const dailyReset = nextMytMidnight(now);
      const nextGrant = u.receivesGrant ? nextMytMonthStart(now) : null;
      return create(GetUsageResponseSchema, {
        ok: true,
        ts: BigInt(now),
        plan: u.plan,
        subscriptionUntil: u.subscriptionUntil === null ? undefined : BigInt(u.subscriptionUntil),
        subscriptionUntilAt: u.subscriptionUntil === null ? undefined : mytIso(u.subscriptionUntil),
        creditsLeft: BigInt(u.grantTokens + u.packTokens),
        grantCredits: BigInt(u.grantTokens),
        packCredits: BigInt(u.packTokens),
        monthlyGrant: BigInt(deps.limits.monthlyGrant),
        callsToday: u.callsToday,
        dailyCap: deps.limits.dailyCap,
        dailyResetTs: BigInt(dailyReset),
        dailyResetAt: mytIso(dailyReset),
        nextGrantTs: nextGrant === null ? undefined : BigInt(nextGrant),
        nextGrantAt: nextGrant === null ? undefined : mytIso(nextGrant),
      });
    },
  };
}
