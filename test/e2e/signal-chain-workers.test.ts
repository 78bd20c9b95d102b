/**
 * The signal log stays one linear chain when live candles reach two server processes at once,
 * each running WORKERS=2 on one Postgres database (the production shape: replicas behind a load
 * balancer, each a cluster): every live event is chained, each follows the one before it in seq
 * order, and the members' log file verifies.
 */

import { create } from "@bufbuild/protobuf";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestService, type PushCandlesRequest, PushCandlesRequestSchema } from "../../gen/signals/v1/ingest_pb.js";
import type { DbHandle } from "../../src/db/client.ts";
import { formatChainLog, GENESIS_HASH, verifyChainLog } from "../../src/market/event-chain.ts";
import { chainLogPages } from "../../src/track-record/event-log.ts";
import type { ServerProcess } from "../support/processes.ts";
import { structureBreak } from "../support/structure-break.ts";
import { usingPostgres } from "../support/test-db.ts";
import { startWorkersServers, type WorkersServers } from "../support/workers-servers.ts";

const H = 3_600_000;
const INTERNAL_TOKEN = "signal-chain-workers-token-42";
const COINS_PER_SERVER = 6;

describe.runIf(usingPostgres)("the signal log with two WORKERS=2 servers on one Postgres database", () => {
  let deployment: WorkersServers;
  let servers: ServerProcess[] = [];
  const sessions: Http2SessionManager[] = [];
  let db: DbHandle;

  beforeAll(async () => {
    deployment = await startWorkersServers({
      internalToken: INTERNAL_TOKEN,
      // Every candle of the series below closed within ALERT_MAX_DELAY: all their signal events are live.
      env: { STALE_AFTER: "86400", ALERT_MAX_DELAY: String(7 * 24 * 3600) },
      servers: [{}, {}],
    });
    ({ servers, db } = deployment);
  }, 120_000);

  afterAll(async () => {
    for (const s of sessions) s.abort();
    await deployment?.close();
  });

  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
    return next(req);
  };

  /** Streams one coin's candles to a server's IngestService over gRPC in live mode, as a feeder does. */
  async function push(server: ServerProcess, symbol: string): Promise<void> {
    const start = Math.floor(Date.now() / H) * H - 70 * H;
    const { history, breaker } = structureBreak(start);
    const sessionManager = new Http2SessionManager(server.internalUrl);
    sessions.push(sessionManager);
    const client = createClient(
      IngestService,
      createGrpcTransport({ baseUrl: server.internalUrl, sessionManager, interceptors: [bearer] }),
    );
    async function* requests(): AsyncGenerator<PushCandlesRequest> {
      for (const candle of [...history, breaker])
        yield create(PushCandlesRequestSchema, {
          symbol,
          tf: "1h",
          ...candle,
          openTime: BigInt(candle.openTime),
          closed: true,
        });
    }
    const res = await client.pushCandles(requests(), { headers: { "x-ingest-mode": "live" } });
    expect(res.accepted).toBe(BigInt(history.length + 1));
  }

  it("chains every live event of both servers into one linear chain that verifies", async () => {
    const pushes: Promise<void>[] = [];
    for (let i = 0; i < COINS_PER_SERVER; i++)
      for (const [k, server] of servers.entries()) pushes.push(push(server, `Q${k}X${i}`));
    await Promise.all(pushes);
    const rows = await db.rows<{
      seq: string;
      live: boolean;
      chain_prev: string | null;
      chain_hash: string | null;
    }>(sql`
      SELECT seq::text AS seq, live, chain_prev, chain_hash FROM signal_events ORDER BY signal_events.seq`);
    const live = rows.filter((r) => r.live);
    // The premise: both servers stored live events, many of them.
    expect(live.length).toBeGreaterThanOrEqual(2 * COINS_PER_SERVER);
    expect(live.every((r) => r.chain_hash !== null)).toBe(true);
    expect(live[0]!.chain_prev).toBe(GENESIS_HASH);
    for (let i = 1; i < live.length; i++)
      expect(live[i]!.chain_prev, `seq ${live[i]!.seq}`).toBe(live[i - 1]!.chain_hash);
    let text = "";
    for await (const page of chainLogPages(db)) text += formatChainLog(page);
    expect(verifyChainLog(text)).toMatchObject({ ok: true, events: live.length });
  });
});
