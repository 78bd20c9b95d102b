/**
 * The feeder's link to the service's internal listener: candle pushes (IngestService), leases
 * and resume points (FeederService) and derivatives (DataIngestService), over HTTP/2 with the
 * internal bearer token, as any external feeder would.
 */
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { pino } from "pino";
import { DataIngestService, type PushDerivativesRequest } from "../../gen/signals/v1/data_ingest_pb.js";
import { FeederService } from "../../gen/signals/v1/feeder_pb.js";
import { IngestService } from "../../gen/signals/v1/ingest_pb.js";
import type { Candle } from "../engine/candle.ts";
import { fixedToken, ServiceLink } from "./service-link.ts";

/** One candle update for the server. */
export interface PushItem {
  readonly symbol: string;
  readonly tf: string;
  readonly candle: Candle;
  readonly closed: boolean;
}

export interface PushResult {
  accepted: number;
  rejected: number;
  duplicates: number;
  /** Rejected updates by symbol with their reasons. */
  rejections: { symbol: string; reason: string }[];
}

export interface ServerClient {
  push(items: readonly PushItem[], mode: "live" | "backfill"): Promise<PushResult>;
  acquireLeases(
    symbols: readonly string[],
    ttlMs: number,
  ): Promise<{ symbol: string; held: boolean; holder: string; expiresInMs: number }[]>;
  releaseLeases(symbols: readonly string[]): Promise<void>;
  resumePoints(
    symbols: readonly string[],
  ): Promise<{ symbol: string; known: boolean; baseTf: string; lastClosedOpenTime: number }[]>;
  pushDerivatives(
    rows: readonly Omit<PushDerivativesRequest, "$typeName" | "$unknown">[],
  ): Promise<{ accepted: number; rejected: number }>;
  /** DataIngestService on the same connection, for the context sources' pushes. */
  readonly dataIngest: Client<typeof DataIngestService>;
  close(): void;
}

/**
 * Creates the client; the link adds the token and `feederId` (`x-feeder-id`) to every call and
 * notes how each ends (service-link.ts).
 */
export function createServerClient(baseUrl: string, tokenOrLink: string | ServiceLink, feederId: string): ServerClient {
  const link =
    typeof tokenOrLink === "string"
      ? new ServiceLink(fixedToken(tokenOrLink), { server: baseUrl, logger: pino({ level: "silent" }), now: Date.now })
      : tokenOrLink;
  const sessionManager = new Http2SessionManager(baseUrl, { pingIntervalMs: 15_000, pingTimeoutMs: 10_000 });
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager,
    interceptors: [link.interceptor(feederId)],
    defaultTimeoutMs: 30_000,
  });
  const ingest: Client<typeof IngestService> = createClient(IngestService, transport);
  const feeder: Client<typeof FeederService> = createClient(FeederService, transport);
  const data: Client<typeof DataIngestService> = createClient(DataIngestService, transport);
  return {
    async push(items, mode) {
      async function* requests() {
        for (const item of items) {
          const c = item.candle;
          yield {
            symbol: item.symbol,
            tf: item.tf,
            openTime: BigInt(c.openTime),
            open: c.open,
            high: c.high,
            low: c.low,
            close: c.close,
            volume: c.volume,
            closed: item.closed,
          };
        }
      }
      const res = await ingest.pushCandles(requests(), { headers: { "x-ingest-mode": mode } });
      return {
        accepted: Number(res.accepted),
        rejected: Number(res.rejected),
        duplicates: Number(res.duplicates),
        rejections: res.rejections.map((r) => ({ symbol: r.symbol, reason: r.reason })),
      };
    },
    async acquireLeases(symbols, ttlMs) {
      const res = await feeder.acquireLeases({ feederId, symbols: [...symbols], ttlMs: BigInt(Math.round(ttlMs)) });
      return res.leases.map((l) => ({
        symbol: l.symbol,
        held: l.held,
        holder: l.holder,
        expiresInMs: Number(l.expiresInMs),
      }));
    },
    async releaseLeases(symbols) {
      await feeder.releaseLeases({ feederId, symbols: [...symbols] });
    },
    async resumePoints(symbols) {
      const res = await feeder.getFeedState({ symbols: [...symbols] });
      return res.coins.map((c) => ({
        symbol: c.symbol,
        known: c.known,
        baseTf: c.baseTf,
        lastClosedOpenTime: Number(c.lastClosedOpenTime),
      }));
    },
    async pushDerivatives(rows) {
      async function* requests() {
        yield* rows;
      }
      const res = await data.pushDerivatives(requests());
      return { accepted: Number(res.accepted), rejected: Number(res.rejected) };
    },
    dataIngest: data,
    close() {
      sessionManager.abort();
    },
  };
}
