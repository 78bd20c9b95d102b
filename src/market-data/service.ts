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
  DerivativesRowSchema,
  FundamentalsRowSchema,
  GetDerivativesResponseSchema,
  GetFundamentalsResponseSchema,
  GetMacroResponseSchema,
  GetMoversResponseSchema,
  GetNewsResponseSchema,
  MacroPointSchema,
  type MarketDataService,
  MoverSchema,
  NewsItemSchema,
} from "../../gen/signals/v1/market_data_pb.js";
import { callerKey } from "../accounts/api-key-guard.ts";
import type { Clock } from "../clock.ts";
import type { DbHandle } from "../db/client.ts";
import { serviceError } from "../errors.ts";
import { errorSummary } from "../logger.ts";
import { normaliseTimeframe, timeframeWarning } from "../signals/request.ts";
import { addWarnings } from "../signals/warnings.ts";
import { admitFreeCall, FREE_WINDOW_MS, type FreeCallResult, freeCall } from "./free-call.ts";
import { computeMovers, type MoverRow } from "./movers.ts";
import {
  encodeCursor,
  LIMITS,
  parseCursor,
  parseLimit,
  parseSeriesFilter,
  parseSince,
  parseSymbolFilter,
} from "./request.ts";
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

const moverMessage = (m: MoverRow) =>
  create(MoverSchema, {
    symbol: m.symbol,
    price: m.price,
    changePct: m.changePct,
    change24hPct: m.change24hPct ?? undefined,
    volume: m.volume,
    volume24h: m.volume24h,
    updatedAt: BigInt(m.updatedAt),
    demo: m.demo,
  });

/** Builds the service implementation over its dependencies. */
export function createMarketDataService(deps: MarketDataServiceDeps): ServiceImpl<typeof MarketDataService> {
  const { logger } = deps;

  const unavailable = (cause: unknown, what: string): never => {
    logger.error({ err: errorSummary(cause) }, what);
    throw serviceError("unavailable");
  };

  /** The key and rate-limit checks; on success the RateLimit headers are set and the call's time returned. */
  async function admit(
    ctx: HandlerContext,
    keyHash: string,
  ): Promise<{ now: number; headers: Record<string, string> }> {
    const now = deps.clock();
    const limit = deps.freeRateLimit;
    const result: FreeCallResult = await freeCall(deps.db, keyHash, now, limit, FREE_WINDOW_MS).catch(
      (cause: unknown) => unavailable(cause, "free_call failed"),
    );
    return { now, headers: admitFreeCall(ctx, result, limit, now, FREE_WINDOW_MS) };
  }

  /**
   * Wraps one method: the free-call checks, and the RateLimit headers also on a 400 (the call
   * has passed the checks and counted).
   */
  function free<Req, Res>(handle: (request: Req, now: number, ctx: HandlerContext) => Promise<Res>) {
    return async (request: Req, ctx: HandlerContext): Promise<Res> => {
      const key = callerKey(ctx);
      const { now, headers } = await admit(ctx, key.hash);
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

  const read = <T>(query: Promise<T>, what: string): Promise<T> =>
    query.catch((cause: unknown) => unavailable(cause, what));

  return {
    getMovers: free(async (request, now, ctx) => {
      const tf = normaliseTimeframe(request.tf);
      // The paid endpoint's 4h fallback, told as there (x-signals-warnings).
      if (request.tf && tf !== request.tf) addWarnings(ctx.responseHeader, [timeframeWarning(request.tf)], "before");
      const limit = parseLimit(request.limit, LIMITS.movers);
      const movers = await read(
        computeMovers(deps.db, { tf, limit, now, staleAfterMs: deps.staleAfterMs }),
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
      const limit = parseLimit(request.limit, LIMITS.derivatives);
      const after = parseCursor("derivatives", request.cursor);
      const symbols = parseSymbolFilter(request.symbols);
      const page = await read(readDerivatives(deps.db, { symbols, after, limit }), "derivatives query failed");
      const last = page.rows[page.rows.length - 1];
      return create(GetDerivativesResponseSchema, {
        ok: true,
        ts: BigInt(now),
        rows: page.rows.map((r) =>
          create(DerivativesRowSchema, {
            symbol: r.symbol,
            venue: r.venue,
            fundingRate: r.fundingRate ?? undefined,
            openInterestUsd: r.openInterestUsd ?? undefined,
            longShortRatio: r.longShortRatio ?? undefined,
            time: BigInt(r.time),
            updatedAt: BigInt(r.updatedAt),
          }),
        ),
        nextCursor: page.more && last ? encodeCursor("derivatives", [last.symbol, last.venue]) : undefined,
      });
    }),

    getNews: free(async (request, now) => {
      const limit = parseLimit(request.limit, LIMITS.news);
      const since = parseSince(request.since);
      const before = parseCursor("news", request.cursor);
      const symbols = parseSymbolFilter(request.symbols);
      const page = await read(readNews(deps.db, { symbols, since, before, limit }), "news query failed");
      const last = page.rows[page.rows.length - 1];
      return create(GetNewsResponseSchema, {
        ok: true,
        ts: BigInt(now),
        items: page.rows.map((r) =>
          create(NewsItemSchema, {
            id: r.id,
            time: BigInt(r.time),
            title: r.title,
            source: r.source,
            url: r.url,
            coins: r.coins,
            updatedAt: BigInt(r.updatedAt),
          }),
        ),
        nextCursor: page.more && last ? encodeCursor("news", [last.time, last.id]) : undefined,
      });
    }),

    getMacro: free(async (request, now) => {
      const limit = parseLimit(request.limit, LIMITS.macro);
      const since = parseSince(request.since);
      const after = parseCursor("macro", request.cursor);
      const series = parseSeriesFilter(request.series);
      const page = await read(readMacro(deps.db, { series, since, after, limit }), "macro query failed");
      const last = page.rows[page.rows.length - 1];
      return create(GetMacroResponseSchema, {
        ok: true,
        ts: BigInt(now),
        points: page.rows.map((r) =>
          create(MacroPointSchema, {
            series: r.series,
            time: BigInt(r.time),
            value: r.value,
            unit: r.unit,
            source: r.source,
            updatedAt: BigInt(r.updatedAt),
          }),
        ),
        nextCursor: page.more && last ? encodeCursor("macro", [last.time, last.series]) : undefined,
      });
    }),

    getFundamentals: free(async (request, now) => {
      const limit = parseLimit(request.limit, LIMITS.fundamentals);
      const cursor = parseCursor("fundamentals", request.cursor);
      const symbols = parseSymbolFilter(request.symbols);
      const page = await read(
        readFundamentals(deps.db, { symbols, after: cursor ? cursor[0] : null, limit }),
        "fundamentals query failed",
      );
      const last = page.rows[page.rows.length - 1];
      return create(GetFundamentalsResponseSchema, {
        ok: true,
        ts: BigInt(now),
        rows: page.rows.map((r) =>
          create(FundamentalsRowSchema, {
            symbol: r.symbol,
            circulatingSupply: r.circulatingSupply,
            maxSupply: r.maxSupply ?? undefined,
            totalSupply: r.totalSupply ?? undefined,
            marketCapUsd: r.marketCapUsd,
            fullyDilutedValuationUsd: r.fullyDilutedValuationUsd ?? undefined,
            rank: r.rank ?? undefined,
            athUsd: r.athUsd ?? undefined,
            athTime: r.athTime === null ? undefined : BigInt(r.athTime),
            source: r.source,
            time: BigInt(r.time),
            updatedAt: BigInt(r.updatedAt),
          }),
        ),
        nextCursor: page.more && last ? encodeCursor("fundamentals", [last.symbol]) : undefined,
      });
    }),
  };
}
