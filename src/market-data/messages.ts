/** The free endpoints' stored rows as their response messages (epoch-ms times as int64, absent values unset). */
import { create } from "@bufbuild/protobuf";
import {
  DerivativesRowSchema,
  FundamentalsRowSchema,
  MacroPointSchema,
  MoverSchema,
  NewsItemSchema,
} from "../../gen/signals/v1/market_data_pb.js";
import type { MoverRow } from "./movers.ts";
import type { StoredDerivatives, StoredFundamentals, StoredMacro, StoredNews } from "./store.ts";

export const moverMessage = (m: MoverRow) =>
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

export const derivativesMessage = (r: StoredDerivatives) =>
  create(DerivativesRowSchema, {
    symbol: r.symbol,
    venue: r.venue,
    fundingRate: r.fundingRate ?? undefined,
    openInterestUsd: r.openInterestUsd ?? undefined,
    longShortRatio: r.longShortRatio ?? undefined,
    time: BigInt(r.time),
    updatedAt: BigInt(r.updatedAt),
  });

export const newsMessage = (r: StoredNews) =>
  create(NewsItemSchema, {
    id: r.id,
    time: BigInt(r.time),
    title: r.title,
    source: r.source,
    url: r.url,
    coins: r.coins,
    updatedAt: BigInt(r.updatedAt),
  });

export const macroMessage = (r: StoredMacro) =>
  create(MacroPointSchema, {
    series: r.series,
    time: BigInt(r.time),
    value: r.value,
    unit: r.unit,
    source: r.source,
    updatedAt: BigInt(r.updatedAt),
  });

export const fundamentalsMessage = (r: StoredFundamentals) =>
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
  });
