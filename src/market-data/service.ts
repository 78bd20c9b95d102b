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
  type GetDerivativesRequest,
  GetDerivativesResponseSchema,
  type GetFundamentalsRequest,
  GetFundamentalsResponseSchema,
  type GetMacroRequest,
  GetMacroResponseSchema,
  type GetMoversRequest,
  GetMoversResponseSchema,
  type GetNewsRequest,
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

/** A query whose failure is logged and answered 503 `unavailable`. */
function orUnavailable<T>(logger: Logger, what: string, query: Promise<T>): Promise<T> {
  return query.catch((cause: unknown) => unavailable(logger, cause, what));
}

function unavailable(logger: Logger, cause: unknown, what: string): never {
  logger.error({ err: errorSummary(cause) }, what);
  throw serviceError("unavailable");
}

async function getMovers(deps: MarketDataServiceDeps, request: GetMoversRequest, now: number, ctx: HandlerContext) {
  const tf = normaliseTimeframe(request.tf);
  // The paid endpoint's 4h fallback, told as there (x-signals-warnings).
  if (request.tf && tf !== request.tf) addWarnings(ctx.responseHeader, [timeframeWarning(request.tf)], "before");
  const limit = parseLimit(request.limit, LIMITS.movers);
  const query = computeMovers(deps.db, { tf, limit, now, staleAfterMs: deps.staleAfterMs });
  const movers = await orUnavailable(deps.logger, "movers query failed", query);
  return create(GetMoversResponseSchema, {
    ok: true,
    tf,
    ts: BigInt(now),
    gainers: movers.gainers.map(moverMessage),
    losers: movers.losers.map(moverMessage),
    volumeLeaders: movers.volumeLeaders.map(moverMessage),
  });
}

async function getDerivatives({ db, logger }: MarketDataServiceDeps, request: GetDerivativesRequest, now: number) {
  const symbols = parseSymbolFilter(request.symbols);
  const page = await readPage(
    "derivatives",
    request,
    (limit, after) => orUnavailable(logger, "derivatives query failed", readDerivatives(db, { symbols, after, limit })),
    (row) => [row.symbol, row.venue],
  );
  const rows = page.rows.map(derivativesMessage);
  return create(GetDerivativesResponseSchema, { ok: true, ts: BigInt(now), rows, nextCursor: page.nextCursor });
}

async function getNews({ db, logger }: MarketDataServiceDeps, request: GetNewsRequest, now: number) {
  const filter = { symbols: parseSymbolFilter(request.symbols), since: parseSince(request.since) };
  const page = await readPage(
    "news",
    request,
    (limit, before) => orUnavailable(logger, "news query failed", readNews(db, { ...filter, before, limit })),
    (row) => [row.time, row.id],
  );
  const items = page.rows.map(newsMessage);
  return create(GetNewsResponseSchema, { ok: true, ts: BigInt(now), items, nextCursor: page.nextCursor });
}

async function getMacro({ db, logger }: MarketDataServiceDeps, request: GetMacroRequest, now: number) {
  const filter = { series: parseSeriesFilter(request.series), since: parseSince(request.since) };
  const page = await readPage(
    "macro",
    request,
    (limit, after) => orUnavailable(logger, "macro query failed", readMacro(db, { ...filter, after, limit })),
    (row) => [row.time, row.series],
  );
  const points = page.rows.map(macroMessage);
  return create(GetMacroResponseSchema, { ok: true, ts: BigInt(now), points, nextCursor: page.nextCursor });
}

async function getFundamentals({ db, logger }: MarketDataServiceDeps, request: GetFundamentalsRequest, now: number) {
  const symbols = parseSymbolFilter(request.symbols);
  const page = await readPage(
    "fundamentals",
    request,
    (limit, after) =>
      orUnavailable(
        logger,
        "fundamentals query failed",
        readFundamentals(db, { symbols, after: after?.[0] ?? null, limit }),
      ),
    (row) => [row.symbol],
  );
  const rows = page.rows.map(fundamentalsMessage);
  return create(GetFundamentalsResponseSchema, { ok: true, ts: BigInt(now), rows, nextCursor: page.nextCursor });
}

/** Builds the service implementation over its dependencies. */
export function createMarketDataService(deps: MarketDataServiceDeps): ServiceImpl<typeof MarketDataService> {
  const free = freeCallChecks(deps);
  return {
    getMovers: free((request, now, ctx) => getMovers(deps, request, now, ctx)),
    getDerivatives: free((request, now) => getDerivatives(deps, request, now)),
    getNews: free((request, now) => getNews(deps, request, now)),
    getMacro: free((request, now) => getMacro(deps, request, now)),
    getFundamentals: free((request, now) => getFundamentals(deps, request, now)),
  };
}
