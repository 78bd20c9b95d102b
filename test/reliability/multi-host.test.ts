/**
 * Several hosts on one database, as separate machines: each server host and the feeder host is
 * a network namespace of its own (made and removed by the test), joined by a private LAN, and
 * each server host reaches the machine's PostgreSQL over a link of its own. No load balancer:
 * the test calls both hosts directly. It cuts one host off the database (its link goes down:
 * packets dropped silently, as in a partition) and then kills the other host (SIGKILL of every
 * process in its namespace) while both take billed calls and a fake exchange moves the market.
 *
 * What must hold: every 200 is charged and every charge answered (the ledger's charges equal the
 * client's 200s); a host cut off from the database answers 503 `unavailable` to every kind of
 * request that needs it (plain and idempotent paid calls, gRPC, a free endpoint, a page) within
 * DB_SILENCE_MS and its probe, at once once it knows, never a 200 it could not charge; an
 * idempotent call cut off is retried after the link returns and gets one answer and one charge;
 * and after the link returns the host never answers older than the market it missed;
 * when a host dies the other answers every call (a call cut off by the kill is retried there
 * with its Idempotency-Key), every alert reaches the Bot API once, and the dead host's feeder
 * leases pass to the standby feeder within FEED_FAILOVER.
 *
 * The database side: the machine's PostgreSQL listens on loopback only, so the test relays each
 * host's link address to it (test/support/tcp-proxy.ts) instead of changing its configuration.
 */
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AdminService } from "../../gen/signals/v1/admin_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { hashToken, newToken } from "../../src/one-time-token.ts";
import { type FakeExchange, startFakeExchange } from "../support/fake-exchange.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { httpGet } from "../support/http-load.ts";
import { createTestNetwork, namespacePids, netnsUnavailableReason, type TestNetwork } from "../support/netns.ts";
import { childEnv } from "../support/processes.ts";
import { loadRealCandles, type RealCoin, realCandlesAvailable } from "../support/real-candles.ts";
import { listeningOf, spawnWatched, type WatchedProcess, waitFor } from "../support/reliability.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

const H = 3_600_000;
const INTERNAL_TOKEN = "multi-host-internal-token-28";
const COINS: RealCoin[] = ["BTC", "ETH", "SOL", "XRP", "ADA", "DOGE"];
const HISTORY = 150;
/**
 * Closes the exchange may still make: the market starts this many hours in the past, so no candle is ever in the
 * future.
 */
const FUTURE = 30;
/** FEED_FAILOVER in seconds: leases last 2/3 of it and are renewed every 1/9. */
const FEED_FAILOVER_S = 9;
const REQUEST_TIMEOUT_S = 30;
/**
 * The servers' DB_SILENCE_MS (the default): a request that needs the database on a host cut off
 * from it is answered 503 within this plus the 2 s probe; once the host knows, at once.
 */
const DB_SILENCE_MS = 5_000;
/** What the test allows for the first answers after the cut: the bound above, with room for a loaded machine. */
const CUT_ANSWER_LIMIT_MS = (REQUEST_TIMEOUT_S * 1000) / 2;
/** The kinds of request B's callers send: each needs the database ("grpc": a plain paid call over gRPC). */
const KINDS = ["paid", "idempotent", "free", "page", "grpc"] as const;
type Kind = (typeof KINDS)[number];
const PATHS: Record<Exclude<Kind, "grpc">, string> = {
  paid: `/api/v1/signals?symbols=${COINS.join(",")}&tf=1h`,
  idempotent: `/api/v1/signals?symbols=${COINS.join(",")}&tf=1h`,
  free: "/api/v1/movers?tf=1h",
  page: "/account",
};
/** The link watch's lines (src/db/link-watch.ts). */
const LINK_DOWN =
  "database unreachable: no answer for the silence bound, nor to a probe; refusing queries until it answers";
const LINK_UP = "database reachable again";
/**
 * The longest any call may take (the servers' REQUEST_TIMEOUT): a close reaches every live host, and its alerts the Bot
 * API, well within it.
 */
const SETTLE_MS = REQUEST_TIMEOUT_S * 1000;
const CHATS = ["2801", "2802"];
/**
 * Where each coin's served series ends, in hours before the end of the real data: chosen so that
 * the closes of each phase change some coin's signal (1, 3 and 4 signal changes in the closes
 * before the cut, during it and after the kill), so every phase has alerts to deliver.
 */
const SERIES_END = 175;
const WORKERS_PER_HOST = 3;
/** The 503 of a process that could not load a newer close in time (src/signals/service.ts). */
const CATCH_UP_MESSAGE = "This server process could not load the latest market data in time; retry shortly.";

/** Why the test cannot run here, or null (checked at collection time; the probe namespace is removed at once). */
const skipReason = !usingPostgres
  ? "needs PostgreSQL (DATABASE_URL): several hosts share one database server"
  : !realCandlesAvailable
    ? "needs the real candles in ../shared/data/candles"
    : netnsUnavailableReason();

interface Call {
  host: "a" | "b";
  kind: Kind;
  /** Null: no answer (connection refused or cut). */
  status: number | null;
  startedAt: number;
  endedAt: number;
  /** BTC's price in a 200. */
  price: number | null;
  replayed: boolean;
  error: string | null;
  message: string | null;
}

const bearer: Interceptor = (next) => (req) => {
  req.header.set("authorization", `Bearer ${INTERNAL_TOKEN}`);
  return next(req);
};

if (skipReason !== null) console.log(`[multi-host] skipped: ${skipReason}`);

describe.skipIf(skipReason !== null)(
  `several hosts on one database${skipReason ? ` (skipped: ${skipReason})` : ""}`,
  () => {
    let net: TestNetwork;
    let database: { url: string; drop: () => Promise<void> };
    const proxies: TcpProxy[] = [];
    let telegram: FakeTelegram;
    let exchange: FakeExchange;
    let sql: postgres.Sql;
    const servers = new Map<"a" | "b", { p: WatchedProcess; baseUrl: string; internalUrl: string }>();
    const feeders = new Map<"a" | "b", { p: WatchedProcess; id: string }>();
    const figures: Record<string, unknown> = {};

    beforeAll(async () => {
      net = createTestNetwork([
        { name: "a", databaseLink: true },
        { name: "b", databaseLink: true },
        { name: "feed", databaseLink: false },
      ]);
      database = await createPostgresDatabase();
      const target = new URL(database.url);
      sql = postgres(database.url, { max: 2, onnotice: () => {} });
      telegram = await startFakeTelegram(FAKE_BOT_TOKEN, net.rootAddress);
      const formingOpen = Math.floor(Date.now() / H) * H - FUTURE * H;
      exchange = await startFakeExchange({
        coins: COINS.map((base) => ({
          base,
          candles: loadRealCandles(base)!.slice(-(HISTORY + 60 + SERIES_END), -SERIES_END),
        })),
        interval: "1h",
        intervalMs: H,
        history: HISTORY + 20,
        startOpenTime: formingOpen,
        host: net.rootAddress,
      });
      const serverEnv = (host: "a" | "b", databaseUrl: string) =>
        childEnv({
          DATABASE_URL: databaseUrl,
          HOST: net.host(host).address,
          PORT: "0",
          INTERNAL_HOST: net.host(host).address,
          INTERNAL_PORT: "0",
          INTERNAL_TOKEN,
          DEMO_ACCOUNT: "false",
          DEMO_FEED: "false",
          LOG_LEVEL: "info",
          DB_POOL_SIZE: "4",
          FAILED_KEY_LIMIT: "1000000",
          FREE_RATE_LIMIT: "1000000",
          DB_SILENCE_MS: String(DB_SILENCE_MS),
          DAILY_CAP: "10000000",
          MONTHLY_GRANT: "100000000",
          STALE_AFTER: String(7 * 24 * 3600),
          ALERT_MAX_DELAY: String(7 * 24 * 3600),
          REQUEST_TIMEOUT: String(REQUEST_TIMEOUT_S),
          TELEGRAM_API_BASE: telegram.apiBase,
          TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        });
      for (const host of ["a", "b"] as const) {
        const proxy = await startTcpProxy(
          target.hostname,
          Number(target.port || 5432),
          net.host(host).databaseAddress!,
        );
        proxies.push(proxy);
        const p = spawnWatched(["src/main.ts"], serverEnv(host, proxy.urlFor(database.url)), net.launcher(host));
        const { port, internalPort } = await listeningOf(p).catch((err: unknown) => {
          throw new Error(`server ${host} did not start: ${String(err)}\n${p.stdout()}\n${p.stderr()}`);
        });
        const address = net.host(host).address;
        servers.set(host, {
          p,
          baseUrl: `http://${address}:${port}`,
          internalUrl: `http://${address}:${internalPort}`,
        });
      }
    }, 180_000);

    afterAll(async () => {
      console.log(`[multi-host figures] ${JSON.stringify(figures)}`);
      net?.destroy();
      await Promise.all([...servers.values(), ...feeders.values()].map((s) => s.p.exited));
      await Promise.all(proxies.map((p) => p.close()));
      await sql?.end({ timeout: 1 });
      await telegram?.close();
      await exchange?.close();
      await database?.drop();
    }, 60_000);

    const feedEnv = (server: "a" | "b") =>
      childEnv({
        FEED_REST_URL: exchange.restUrl,
        FEED_WS_URL: exchange.wsUrl,
        FEED_SERVER: servers.get(server)!.internalUrl,
        FEED_SYMBOLS: COINS.join(","),
        FEED_TF: "1h",
        FEED_HISTORY: String(HISTORY),
        FEED_FAILOVER: String(FEED_FAILOVER_S),
        FEED_METRICS_PORT: "0",
        FEED_DATASETS: "candles",
        INTERNAL_TOKEN,
        LOG_LEVEL: "info",
      });

    async function startFeeder(server: "a" | "b"): Promise<void> {
      const p = spawnWatched(["src/cli/bin.ts", "feed"], feedEnv(server), net.launcher("feed"));
      const started = await waitFor(
        () => p.logs.find((l) => l.msg === "feeder started"),
        60_000,
        () => `feeder via ${server} to start: ${p.stdout()} ${p.stderr()}`,
      );
      feeders.set(server, { p, id: String(started.feederId) });
    }

    /** Each process of a host that logged `msg` after `since` (pino's time), and when it first did. */
    function linkLines(host: "a" | "b", msg: string, since: number): Map<number, number> {
      const first = new Map<number, number>();
      for (const l of servers.get(host)!.p.logs)
        if (l.msg === msg && Number(l.time) > since && !first.has(Number(l.pid)))
          first.set(Number(l.pid), Number(l.time));
      return first;
    }

    async function leaseHolders(): Promise<Map<string, string>> {
      const rows = await sql<
        { symbol: string; holder: string }[]
      >`SELECT symbol, holder FROM feed_leases WHERE expires_at > now()`;
      return new Map(rows.map((r) => [r.symbol, r.holder]));
    }

    async function unsentAlerts(): Promise<number> {
      const [row] = await sql<
        { n: string }[]
      >`SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`;
      return Number(row!.n);
    }

    it("cut off from the database a host answers 503 and never stale; killed, the other host answers " +
      "everything, alerts go out once and feeder leases pass over within FEED_FAILOVER", async () => {
      const started = Date.now();
      const a = servers.get("a")!;
      const admin = createClient(
        AdminService,
        createConnectTransport({ baseUrl: a.internalUrl, httpVersion: "1.1", interceptors: [bearer] }),
      );
      const alpha = await admin.createAccount({ email: "alpha@example.test", plan: "node" });
      const beta = await admin.createAccount({ email: "beta@example.test", plan: "node" });
      // The test's own look at what the hosts answer is billed to an account of its own.
      const watcher = await admin.createAccount({ email: "watcher@example.test", plan: "node" });
      // B's idempotent caller (and its member page), and B's free-endpoint caller.
      const gamma = await admin.createAccount({ email: "gamma@example.test", plan: "node" });
      const delta = await admin.createAccount({ email: "delta@example.test", plan: "node" });
      // B's gRPC caller.
      const epsilon = await admin.createAccount({ email: "epsilon@example.test", plan: "node" });
      const gammaSession = newToken();
      await sql`INSERT INTO web_sessions (token_hash, account_id, csrf_secret, expires_at)
        VALUES (${hashToken(gammaSession)}, ${Number(gamma.account!.accountId)}, ${newToken()},
        now() + interval '1 day')`;
      for (const [i, chatId] of CHATS.entries()) {
        const member = await admin.createAccount({ email: `member${i}@example.test`, plan: "node" });
        await admin.setAlerts({
          accountId: member.account!.accountId,
          alerts: { chatId, symbols: COINS, timeframes: ["1h"] },
        });
      }

      // The feeder host: one feeder through each server host; the one through A leads every coin.
      await startFeeder("a");
      await waitFor(
        async () =>
          [...(await leaseHolders()).values()].filter((h) => h === feeders.get("a")!.id).length === COINS.length,
        SETTLE_MS,
        "the feeder through A to lead every coin",
      );
      await startFeeder("b");

      const btcPrice = async (host: "a" | "b"): Promise<number | null> => {
        const agent = new http.Agent({ keepAlive: false });
        try {
          const r = await httpGet(
            `${servers.get(host)!.baseUrl}/api/v1/signals?symbols=BTC&tf=1h`,
            { "x-api-key": watcher.apiKey },
            agent,
            10_000,
          );
          return r.status === 200
            ? ((JSON.parse(r.body) as { signals: Array<{ price?: number }> }).signals[0]?.price ?? null)
            : null;
        } catch {
          return null;
        } finally {
          agent.destroy();
        }
      };
      /**
       * Every BTC price each forming candle has shown, by its open time (to tell an old candle's price from the current
       * one).
       */
      const formingPrices = new Map<number, Set<number>>();
      const noteForming = () => {
        const forming = exchange.forming("BTC");
        formingPrices.set(forming.openTime, (formingPrices.get(forming.openTime) ?? new Set()).add(forming.close));
      };
      let tickedAt = 0;
      /**
       * Whether `hosts` answer the forming candle. Meanwhile the market keeps talking (an update a
       * second, as a real exchange's stream does), so a feeder that subscribed after a close still
       * hears of the next candle and fills the gap.
       */
      const answersForming = (hosts: ReadonlyArray<"a" | "b">) => async () => {
        if (Date.now() - tickedAt >= 1_000) {
          exchange.tick();
          noteForming();
          tickedAt = Date.now();
        }
        for (const host of hosts) if ((await btcPrice(host)) !== exchange.forming("BTC").close) return false;
        return true;
      };
      /** One close on every coin, then until `hosts` answer the new forming candle and every alert is out. */
      const closeAndWait = async (hosts: ReadonlyArray<"a" | "b">, timeoutMs: number) => {
        exchange.closeCandles();
        noteForming();
        await waitFor(
          answersForming(hosts),
          timeoutMs,
          () => `hosts ${hosts.join(",")} to answer the forming BTC ${exchange.forming("BTC").close}`,
        );
        await waitFor(async () => (await unsentAlerts()) === 0, timeoutMs, "every alert delivered");
      };
      await waitFor(answersForming(["a", "b"]), 60_000, "both hosts to answer the exchange's forming candle");
      figures.setupMs = Date.now() - started;

      // Load: callers on both hosts, each on keep-alive connections. Callers of A send an
      // Idempotency-Key and retry a call that got no answer at B (no load balancer: the client does it).
      const calls: Call[] = [];
      /** Calls sent and not answered yet. */
      const inFlight = new Set<{ host: "a" | "b"; kind: Kind; startedAt: number }>();
      let stopping = false;
      let abandoned = false;
      let job = 0;
      const request = async (
        host: "a" | "b",
        kind: Exclude<Kind, "grpc">,
        headers: Record<string, string>,
        agent: http.Agent,
      ): Promise<Call> => {
        const startedAt = Date.now();
        const sent = { host, kind, startedAt };
        inFlight.add(sent);
        try {
          const r = await httpGet(
            `${servers.get(host)!.baseUrl}${PATHS[kind]}`,
            headers,
            agent,
            (REQUEST_TIMEOUT_S + 10) * 1000,
          );
          // A page's error code travels in a header; the API's in its JSON body.
          const body = (
            kind === "page"
              ? { error: r.headers["x-error-code"] ?? (r.status === 200 ? undefined : `page ${r.status}`) }
              : JSON.parse(r.body)
          ) as { signals?: Array<{ price?: number }>; error?: string; message?: string };
          const price = r.status === 200 ? (body.signals?.[0]?.price ?? null) : null;
          return {
            host,
            kind,
            status: r.status,
            startedAt,
            endedAt: Date.now(),
            price,
            replayed: r.headers["idempotent-replayed"] === "true",
            error: body.error ?? null,
            message: body.message ?? null,
          };
        } catch (err) {
          return {
            host,
            kind,
            status: null,
            startedAt,
            endedAt: Date.now(),
            price: null,
            replayed: false,
            error: String((err as Error).message ?? err),
            message: null,
          };
        } finally {
          inFlight.delete(sent);
        }
      };
      const callOnce = (host: "a" | "b", apiKey: string, agent: http.Agent, idempotencyKey: string | null) =>
        request(
          host,
          idempotencyKey ? "idempotent" : "paid",
          idempotencyKey ? { "x-api-key": apiKey, "idempotency-key": idempotencyKey } : { "x-api-key": apiKey },
          agent,
        );
      /** A pause before the next call after a refusal, as a client would take (a 503 comes at once while B knows). */
      const afterRefusal = (c: Call) => (c.status === 200 ? Promise.resolve() : sleep(100));
      const jobs: Array<{ key: string; answers: Call[] }> = [];
      const callerOfA = async () => {
        const agents = {
          a: new http.Agent({ keepAlive: true, maxSockets: 1 }),
          b: new http.Agent({ keepAlive: true, maxSockets: 1 }),
        };
        while (!stopping) {
          const entry = { key: `mh-job-${++job}`, answers: [] as Call[] };
          jobs.push(entry);
          let answer = await callOnce("a", alpha.apiKey, agents.a, entry.key);
          entry.answers.push(answer);
          while (answer.status === null || answer.status === 503) {
            answer = await callOnce("b", alpha.apiKey, agents.b, entry.key);
            entry.answers.push(answer);
          }
          calls.push(...entry.answers);
        }
        agents.a.destroy();
        agents.b.destroy();
      };
      const callerOfB = async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        while (!stopping) {
          const answer = await callOnce("b", beta.apiKey, agent, null);
          calls.push(answer);
          await afterRefusal(answer);
        }
        agent.destroy();
      };
      /** Jobs of B's idempotent caller: each key retried at B until it is answered 200. */
      const jobsOfB: Array<{ key: string; answers: Call[] }> = [];
      const idempotentCallerOfB = async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        while (!stopping) {
          const entry = { key: `mh-b-job-${jobsOfB.length + 1}`, answers: [] as Call[] };
          jobsOfB.push(entry);
          // A job begun is finished even after the run stops: its last answer must be a 200.
          for (;;) {
            const answer = await callOnce("b", gamma.apiKey, agent, entry.key);
            entry.answers.push(answer);
            calls.push(answer);
            if (answer.status === 200 || abandoned) break;
            await afterRefusal(answer);
          }
        }
        agent.destroy();
      };
      const freeCallerOfB = async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        while (!stopping) {
          const answer = await request("b", "free", { "x-api-key": delta.apiKey }, agent);
          calls.push(answer);
          await afterRefusal(answer);
        }
        agent.destroy();
      };
      /** gRPC: UNAVAILABLE with the ErrorInfo `unavailable` is noted as a 503 with that error. */
      const grpcCallerOfB = async () => {
        const client = createClient(SignalsService, createGrpcTransport({ baseUrl: servers.get("b")!.baseUrl }));
        while (!stopping) {
          const startedAt = Date.now();
          const sent = { host: "b" as const, kind: "grpc" as const, startedAt };
          inFlight.add(sent);
          const answer: Call = {
            host: "b",
            kind: "grpc",
            status: 200,
            startedAt,
            endedAt: 0,
            price: null,
            replayed: false,
            error: null,
            message: null,
          };
          try {
            const r = await client.getSignals(
              { symbols: COINS.join(","), tf: "1h" },
              { headers: { "x-api-key": epsilon.apiKey }, timeoutMs: (REQUEST_TIMEOUT_S + 10) * 1000 },
            );
            answer.price = r.signals[0]?.price ?? null;
          } catch (e) {
            const err = ConnectError.from(e);
            answer.status = err.code === Code.Unavailable ? 503 : null;
            answer.error = err.findDetails(ErrorInfoSchema)[0]?.reason ?? `${Code[err.code]} ${err.rawMessage}`;
            answer.message = err.rawMessage;
          } finally {
            answer.endedAt = Date.now();
            inFlight.delete(sent);
          }
          calls.push(answer);
          await afterRefusal(answer);
        }
      };
      const pageCallerOfB = async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        while (!stopping) {
          const answer = await request("b", "page", { cookie: `sid=${gammaSession}` }, agent);
          calls.push(answer);
          await afterRefusal(answer);
        }
        agent.destroy();
      };
      const load = Promise.all([
        ...Array.from({ length: WORKERS_PER_HOST }, callerOfA),
        ...Array.from({ length: WORKERS_PER_HOST }, callerOfB),
        idempotentCallerOfB(),
        freeCallerOfB(),
        pageCallerOfB(),
        grpcCallerOfB(),
      ]);

      try {
        // 1. Both hosts up: the market moves, both answer it, alerts go out.
        await closeAndWait(["a", "b"], SETTLE_MS);
        await closeAndWait(["a", "b"], SETTLE_MS);
        const alertsBeforeCut = telegram.delivered.length;
        // Each host's connections to the database run through its own relay.
        figures.databaseConnections = { a: proxies[0]!.stats().open, b: proxies[1]!.stats().open };

        // 2. B cut off from the database while the market moves on through A.
        const candleBeforeCut = exchange.forming("BTC").openTime;
        net.cutDatabase("b");
        const cutAt = Date.now();
        await closeAndWait(["a"], SETTLE_MS);
        // The cut holds until the calls B had in flight when it began are answered and each kind
        // of B's callers has had an answer to a call sent after it. Each answer is asserted to come
        // within CUT_ANSWER_LIMIT_MS; the wait allows two request timeouts, so that a host that
        // answers only at its request timeout (408) fails on the statuses below, not on this wait.
        const sinceCut = (kind: Kind) => calls.filter((c) => c.host === "b" && c.kind === kind && c.startedAt > cutAt);
        await waitFor(
          () =>
            [...inFlight].every((c) => c.host !== "b" || c.startedAt > cutAt) &&
            KINDS.every((kind) => sinceCut(kind).length > 0),
          2 * REQUEST_TIMEOUT_S * 1000,
          () =>
            `B's callers answered during the cut (${KINDS.map((k) => `${k} ${sinceCut(k).length}`)} so far; in ` +
            `flight since ${[...inFlight].filter((c) => c.host === "b").map((c) => Date.now() - c.startedAt)} ms)`,
        );
        // Every answer so far: 503 `unavailable`, each within the bound (calls in flight at the cut included).
        const firstAnswers = calls.filter((c) => c.host === "b" && c.endedAt > cutAt);
        expect(
          firstAnswers.filter((c) => c.startedAt > cutAt && (c.status !== 503 || c.error !== "unavailable")),
        ).toEqual([]);
        expect(firstAnswers.filter((c) => c.endedAt - c.startedAt >= CUT_ANSWER_LIMIT_MS)).toEqual([]);
        // Each of B's processes learns the link is down (a failed probe) once one of its queries
        // waited DB_SILENCE_MS, so every process that takes a call during the cut does; from then
        // on it answers every kind at once, not after a silence bound of its own.
        const knownDown = () => {
          const down = linkLines("b", LINK_DOWN, cutAt);
          return down.size > 0 ? Math.max(...down.values()) : null;
        };
        const sinceKnown = (kind: Kind) =>
          calls.filter((c) => c.host === "b" && c.kind === kind && c.startedAt > (knownDown() ?? Infinity));
        await waitFor(
          () => KINDS.every((kind) => sinceKnown(kind).length >= 3),
          REQUEST_TIMEOUT_S * 1000,
          () =>
            `B's callers answered once B knew (${knownDown()}; ${KINDS.map((k) => `${k} ${sinceKnown(k).length}`)})`,
        );
        const candleAfterCut = exchange.forming("BTC").openTime;
        expect(candleAfterCut).toBeGreaterThan(candleBeforeCut);
        net.restoreDatabase("b");
        const restoredAt = Date.now();
        const wentDown = [...linkLines("b", LINK_DOWN, cutAt).keys()];
        const knownDownAt = knownDown()!;
        // B finds out by itself: each of its processes probes the database while it is down.
        const recoveredAt = await waitFor(
          () => {
            const up = linkLines("b", LINK_UP, restoredAt);
            return wentDown.every((pid) => up.has(pid)) ? Math.max(...up.values()) : null;
          },
          REQUEST_TIMEOUT_S * 1000,
          () => `every process of B that went down (${wentDown}) to log "${LINK_UP}"`,
        );
        await waitFor(
          () => calls.some((c) => c.host === "b" && c.status === 200 && c.startedAt > recoveredAt),
          REQUEST_TIMEOUT_S * 1000,
          "a 200 from B after the link returned",
        );
        figures.recoveredAfterMs = recoveredAt - restoredAt;
        figures.first200AfterLinkMs =
          calls.find((c) => c.host === "b" && c.status === 200 && c.startedAt > restoredAt)!.endedAt - restoredAt;
        await waitFor(answersForming(["a", "b"]), SETTLE_MS, "both hosts to answer the latest close");
        await waitFor(
          () =>
            KINDS.every((kind) =>
              calls.some((c) => c.host === "b" && c.kind === kind && c.status === 200 && c.startedAt > recoveredAt),
            ),
          REQUEST_TIMEOUT_S * 1000,
          "every kind of B's callers answered 200 after the link returned",
        );
        const cutCalls = calls.filter((c) => c.host === "b" && c.startedAt > cutAt && c.endedAt < restoredAt);
        const duringCut = calls.filter((c) => c.host === "b" && c.endedAt > cutAt && c.startedAt < restoredAt);
        const onceKnown = cutCalls.filter((c) => c.startedAt > knownDownAt);
        const slowest = (list: Call[]) => Math.max(...list.map((c) => c.endedAt - c.startedAt));
        figures.connectionsOfBAfterCut = proxies[1]!.stats();
        figures.cut = {
          from: cutAt,
          to: restoredAt,
          ms: restoredAt - cutAt,
          knownDownAfterMs: knownDownAt - cutAt,
          processesDown: wentDown.length,
          callsToB: cutCalls.length,
          statuses: Object.fromEntries(
            KINDS.map((k) => [k, tally(cutCalls.filter((c) => c.kind === k).map((c) => String(c.status)))]),
          ),
          slowestAnswerMs: Object.fromEntries(KINDS.map((k) => [k, slowest(duringCut.filter((c) => c.kind === k))])),
          onceKnown: { calls: onceKnown.length, slowestAnswerMs: slowest(onceKnown) },
        };
        // Nothing B could not charge was answered 200, and B never answered the market it missed.
        expect(cutCalls.filter((c) => c.status === 200)).toEqual([]);
        expect(cutCalls.filter((c) => c.status !== 503)).toEqual([]);
        expect(new Set(cutCalls.map((c) => c.error))).toEqual(new Set(["unavailable"]));
        expect(duringCut.filter((c) => c.endedAt - c.startedAt >= CUT_ANSWER_LIMIT_MS)).toEqual([]);
        // Once B knew, no call waited a silence bound of its own.
        expect(KINDS.filter((kind) => !onceKnown.some((c) => c.kind === kind))).toEqual([]);
        expect(onceKnown.filter((c) => c.endedAt - c.startedAt >= DB_SILENCE_MS)).toEqual([]);
        const olderPrices = new Set(
          [...formingPrices].filter(([openTime]) => openTime < candleAfterCut).flatMap(([, prices]) => [...prices]),
        );
        expect([...formingPrices.get(candleAfterCut)!].filter((p) => olderPrices.has(p))).toEqual([]);
        expect(
          calls.filter(
            // A replay is the stored answer of a call charged before the cut: the market as it was then, by design.
            (c) =>
              c.host === "b" &&
              c.status === 200 &&
              !c.replayed &&
              c.startedAt > restoredAt &&
              olderPrices.has(c.price!),
          ),
        ).toEqual([]);
        figures.cut = { ...(figures.cut as object), recoveredAt };

        // 3. A killed mid-load, with no alert between its send and its acknowledgement (that
        // repeat is what at-least-once allows; test/e2e/alert-crash.test.ts covers it).
        await waitFor(async () => (await unsentAlerts()) === 0, SETTLE_MS, "no alert pending before the kill");
        const alertsBeforeKill = telegram.delivered.length;
        const killedFeederId = feeders.get("a")!.id;
        const pids = net.killHost("a");
        const killedAt = Date.now();
        expect(pids.length).toBeGreaterThan(0);
        await waitFor(() => namespacePids(net.host("a").ns).length === 0, 10_000, "host A's processes gone");
        const holders = await waitFor(
          async () => {
            const now = await leaseHolders();
            return now.size === COINS.length && [...now.values()].every((h) => h === feeders.get("b")!.id) ? now : null;
          },
          FEED_FAILOVER_S * 1000 * 2,
          "the standby feeder to hold every lease",
          25,
        );
        const failoverMs = Date.now() - killedAt;
        figures.leaseFailoverMs = failoverMs;
        expect(holders.size).toBe(COINS.length);
        expect([...holders.values()]).not.toContain(killedFeederId);
        expect(failoverMs).toBeLessThanOrEqual(FEED_FAILOVER_S * 1000);
        await closeAndWait(["b"], SETTLE_MS);
        await closeAndWait(["b"], SETTLE_MS);
        figures.alerts = {
          beforeCut: alertsBeforeCut,
          beforeKill: alertsBeforeKill,
          afterKill: telegram.delivered.length - alertsBeforeKill,
        };
      } catch (err) {
        // B's idempotent caller retries a job until it is answered: on a failure, it stops after the current try.
        abandoned = true;
        const b = servers.get("b")!.p;
        const levels = b.logs.filter((l) => Number(l.level) >= 50).slice(-5);
        console.log(
          `[multi-host] B exit ${b.child.exitCode} ${b.child.signalCode}; last errors ${JSON.stringify(levels)}`,
        );
        console.log(`[multi-host] B stderr: ${b.stderr().slice(-3000)}`);
        throw err;
      } finally {
        stopping = true;
        net.restoreDatabase("b");
        await load;
      }

      // Every call to B answered 200 outside the cut; every job of A's callers ended in one 200.
      const { cut } = figures as { cut: { from: number; to: number; recoveredAt: number } };
      const bCalls = calls.filter((c) => c.host === "b" && !jobs.some((j) => j.answers.includes(c)));
      const paidToB = bCalls.filter((c) => c.kind === "paid");
      const jobsOk = jobs.filter((j) => j.answers.at(-1)?.status === 200);
      figures.calls = {
        toB: bCalls.length,
        toBStatuses: Object.fromEntries(
          KINDS.map((k) => [k, tally(bCalls.filter((c) => c.kind === k).map((c) => String(c.status)))]),
        ),
        jobsOfB: jobsOfB.length,
        jobsOfBCutOff: jobsOfB.filter((j) => j.answers.length > 1).length,
        jobsOfBReplayed: jobsOfB.filter((j) => j.answers.at(-1)?.replayed).length,
        toBCatchUp503: bCalls.filter((c) => c.status === 503 && c.message === CATCH_UP_MESSAGE).length,
        jobsOfA: jobs.length,
        jobsAnsweredByB: jobs.filter((j) => j.answers.length > 1).length,
        replayed: jobs.filter((j) => j.answers.at(-1)?.replayed).length,
      };
      expect(bCalls.filter((c) => c.status !== 200 && c.status !== 503)).toEqual([]);
      // B's "database unavailable" 503s all came while it was cut off (calls in flight when the cut
      // began included, and calls before B's probe found the link back). The other 503 is a process
      // that could not catch up with a close within CATCH_UP_MS (allowed, never charged; a loaded
      // machine shows a few after each close).
      const catchUp = (c: Call) => c.status === 503 && c.message === CATCH_UP_MESSAGE;
      expect(
        bCalls.filter(
          (c) => c.status === 503 && !catchUp(c) && !(c.endedAt >= cut.from && c.startedAt < cut.recoveredAt),
        ),
      ).toEqual([]);
      // Every idempotent job at B ended in one 200 (a job cut off was retried after the link returned).
      expect(jobsOfB.filter((j) => j.answers.filter((c) => c.status === 200).length !== 1)).toEqual([]);
      expect(jobsOfB.filter((j) => j.answers.length > 1).length).toBeGreaterThan(0);
      expect(jobsOk.length).toBe(jobs.length);

      // The ledger: charges equal the 200s each account's callers received.
      const charges = async (accountId: bigint) => {
        const [row] = await sql<{ charges: string; refunds: string }[]>`
        SELECT count(*) FILTER (WHERE kind = 'charge') AS charges, count(*) FILTER (WHERE kind = 'adjustment'
        AND reason LIKE 'refund:%') AS refunds
          FROM ledger_entries WHERE account_id = ${Number(accountId)}`;
        return Number(row!.charges) - Number(row!.refunds);
      };
      const betaOk = paidToB.filter((c) => c.status === 200).length;
      figures.ledger = {
        alpha: { charged: await charges(alpha.account!.accountId), answered200: jobsOk.length },
        beta: { charged: await charges(beta.account!.accountId), answered200: betaOk },
        gamma: { charged: await charges(gamma.account!.accountId), jobsAnswered: jobsOfB.length },
        epsilon: {
          charged: await charges(epsilon.account!.accountId),
          answered200: bCalls.filter((c) => c.kind === "grpc" && c.status === 200).length,
        },
      };
      // One charge per idempotent job of B, however many tries it took; the test's page and free
      // calls of gamma and delta charge nothing.
      expect(await charges(gamma.account!.accountId)).toBe(jobsOfB.length);
      expect(await charges(delta.account!.accountId)).toBe(0);
      const grpcOk = bCalls.filter((c) => c.kind === "grpc" && c.status === 200).length;
      expect(await charges(epsilon.account!.accountId)).toBe(grpcOk);
      expect(await charges(beta.account!.accountId)).toBe(betaOk);
      expect(await charges(alpha.account!.accountId)).toBe(jobsOk.length);

      // Alerts: each outbox row sent, and each reached the Bot API exactly once.
      const rows = await sql<
        { chat_id: string; event_id: string; sent: boolean }[]
      >`SELECT chat_id, event_id, sent_at IS NOT NULL AS sent FROM outbox WHERE kind = 'signal_alert'`;
      const delivered = telegram.delivered.map((m) => `${m.chatId} ${m.eventId}`);
      expect(rows.every((r) => r.sent)).toBe(true);
      expect(delivered.sort()).toEqual(rows.map((r) => `${r.chat_id} ${r.event_id}`).sort());
      expect(new Set(delivered).size).toBe(delivered.length);
      // And none was lost: every live signal event has its alert to each member's chat.
      const events = await sql<{ id: string }[]>`SELECT id FROM signal_events WHERE live AND tf = '1h'`;
      figures.liveSignalEvents = events.length;
      expect(events.length).toBeGreaterThan(0);
      for (const chatId of CHATS)
        expect(
          rows
            .filter((r) => r.chat_id === chatId)
            .map((r) => r.event_id)
            .sort(),
        ).toEqual(events.map((e) => e.id).sort());
      figures.wallMs = Date.now() - started;
    }, 240_000);
  },
);

function tally(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
