/**
 * MarketDataService: the free endpoints (movers, derivatives, news, macro, fundamentals),
 * written once and served over REST, Connect, gRPC and gRPC-Web like SignalsService.
 *
 * Order of work per call, after the API-key guard (accounts/api-key-guard.ts): ONE `free_call`
 * round trip (key valid, subscription active on any plan, the key's free calls in this minute)
 * → the RateLimit headers → the filters (400 on a value that
 * cannot be read) → the read. No Token is charged and the daily cap is not touched.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  GetDerivativesResponseSchema,
  GetFundamentalsResponseSchema,
  GetMacroResponseSchema,
  GetMoversResponseSchema,
  GetNewsResponseSchema,
  type MarketDataService,
} from "../../gen/signals/v1/market_data_pb.js";
import { callerKey } from "../accounts/api-key-guard.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { normaliseTimeframe, timeframeWarning } from "../signals/request.ts";
import { addWarnings } from "../signals/warnings.ts";
import { admitFreeCall, FREE_WINDOW_MS, freeCall } from "./free-call.ts";
import { derivativesMessage, fundamentalsMessage, macroMessage, moverMessage, newsMessage } from "./messages.ts";
import { computeMovers } from "./movers.ts";
import { LIMITS, parseLimit, parseSeriesFilter, parseSince, parseSymbolFilter, readPage } from "./request.ts";
import { readDerivatives, readFundamentals, readMacro, readNews } from "./store.ts";

export interface MarketDataServiceDeps {
  readonly db: DbHandle;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Coins silent for longer than this are left out of the movers. */
  readonly staleAfterMs: number;
  /** Free calls per API key per minute. */
  readonly freeRateLimit: number;
}

type FreeMethod<Req, Res> = (request: Req, now: number, ctx: HandlerContext) => Promise<Res>;

/**
 * Wraps one method in the free-call checks (one `free_call` round trip); the RateLimit headers
 * go on the answer, and also on a 400 (the call has passed the checks and counted).
 */
function freeCallChecks(deps: MarketDataServiceDeps) {
  return <Req, Res>(handle: FreeMethod<Req, Res>) =>
    async (request: Req, ctx: HandlerContext): Promise<Res> => {
      const key = callerKey(ctx);
      const now = deps.clock();
      const result = await freeCall(deps.db, key.hash, now, deps.freeRateLimit, FREE_WINDOW_MS).catch(
        (cause: unknown) => unavailable(deps.logger, cause, "free_call failed"),
      );
      const headers = admitFreeCall(ctx, result, deps.freeRateLimit, now, FREE_WINDOW_MS);
      key.accepted(now);
      try {
        return await handle(request, now, ctx);
      } catch (err) {
        if (err instanceof ConnectError) {
          // Once, on the error: Connect would append the error's metadata to the response headers.
          for (const [name, value] of Object.entries(headers)) {
            ctx.responseHeader.delete(name);
            err.metadata.set(name, value);
          }
        }
        throw err;
      }
    };
}

function unavailable(logger: Logger, cause: unknown, what: string): never {
  logger.error({ err: errorSummary(cause) }, what);
  throw serviceError("unavailable");
}

/** Builds the service implementation over its dependencies. */
export function createMarketDataService(deps: MarketDataServiceDeps): ServiceImpl<typeof MarketDataService> {
  const { db } = deps;
  const free = freeCallChecks(deps);
  const read = <T>(query: Promise<T>, what: string): Promise<T> =>
    query.catch((cause: unknown) => unavailable(deps.logger, cause, what));

  return {
    getMovers: free(async (request, now, ctx) => {
      const tf = normaliseTimeframe(request.tf);
      // The paid endpoint's 4h fallback, told as there (x-signals-warnings).
      if (request.tf && tf !== request.tf) addWarnings(ctx.responseHeader, [timeframeWarning(request.tf)], "before");
      const limit = parseLimit(request.limit, LIMITS.movers);
      const movers = await read(
        computeMovers(db, { tf, limit, now, staleAfterMs: deps.staleAfterMs }),
        "movers query failed",
      );
      return create(GetMoversResponseSchema, {
        ok: true,
        tf,
        ts: BigInt(now),
        gainers: movers.gainers.map(moverMessage),
        losers: movers.losers.map(moverMessage),
        volumeLeaders: movers.volumeLeaders.map(moverMessage),
      });
    }),

    getDerivatives: free(async (request, now) => {
      const page = await readPage(
        "derivatives",
        request,
        (limit, after) =>
          read(
            readDerivatives(db, { symbols: parseSymbolFilter(request.symbols), after, limit }),
            "derivatives query failed",
          ),
        (row) => [row.symbol, row.venue],
      );
      return create(GetDerivativesResponseSchema, {
        ok: true,
        ts: BigInt(now),
        rows: page.rows.map(derivativesMessage),
        nextCursor: page.nextCursor,
      });
    }),

    getNews: free(async (request, now) => {
      const page = await readPage(
        "news",
        request,
        (limit, before) =>
          read(
            readNews(db, {
              symbols: parseSymbolFilter(request.symbols),
              since: parseSince(request.since),
              before,
              limit,
            }),
            "news query failed",
          ),
        (row) => [row.time, row.id],
      );
      return create(GetNewsResponseSchema, {
        ok: true,
        ts: BigInt(now),
        items: page.rows.map(newsMessage),
        nextCursor: page.nextCursor,
      });
    }),

    getMacro: free(async (request, now) => {
      const page = await readPage(
        "macro",
        request,
        (limit, after) =>
          read(
            readMacro(db, {
              series: parseSeriesFilter(request.series),
              since: parseSince(request.since),
              after,
              limit,
            }),
            "macro query failed",
          ),
        (row) => [row.time, row.series],
      );
      return create(GetMacroResponseSchema, {
        ok: true,
        ts: BigInt(now),
        points: page.rows.map(macroMessage),
        nextCursor: page.nextCursor,
      });
    }),

    getFundamentals: free(async (request, now) => {
      const page = await readPage(
        "fundamentals",
        request,
        (limit, after) =>
          read(
            readFundamentals(db, {
              symbols: parseSymbolFilter(request.symbols),
              after: after ? after[0] : null,
              limit,
            }),
            "fundamentals query failed",
          ),
        (row) => [row.symbol],
      );
      return create(GetFundamentalsResponseSchema, {
        ok: true,
        ts: BigInt(now),
        rows: page.rows.map(fundamentalsMessage),
        nextCursor: page.nextCursor,
      });
    }),
  };
}
