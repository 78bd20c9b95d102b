/**
 * `npm run bench -- feeder-400 [--minutes 30] [--history 200]` (slow: not in `npm test`; run it
 * under `nice -n 19` on a shared machine): one `signals feed` process on **400 coins** of the
 * fake Binance (`test/support/fake-market.ts`: the twelve real series, re-timed and scaled per
 * coin) on the 15m base, against a server process on a fresh PostgreSQL database. Beside it, in
 * the same run, against the same exchange and server, under the same faults, a baseline feeder
 * on **one** coin. Every minute of wall time every coin's candle closes (1m pacing, as the
 * feeder soak: the exchange's clock runs 15× faster), forming updates every 2 s (Binance's
 * kline update speed); the exchange drops every socket at a random moment every 20–60 s, every
 * third drop with a REST fault burst (a 429 with Retry-After or a 503, then a 502).
 *
 * Figures: feeder RSS (after the cold start, steady peak and median, end), close → stored lag,
 * candles lost / wrong / duplicated, websocket connections and streams per connection, the
 * exchange's limits kept. Exits non-zero on a miss: steady RSS ≥ 300 MiB, any candle lost,
 * wrong or duplicated, a breach of Binance's websocket limits, or more than one connection at a
 * time for the 400 coins. Needs ../shared/data/candles and PostgreSQL (BENCH_DATABASE_URL).
 */
import postgres from "postgres";
import { WS_MAX_INCOMING_PER_SECOND, WS_MAX_STREAMS_PER_CONNECTION } from "../test/support/fake-exchange.ts";
import { realCandlesAvailable } from "../test/support/real-candles.ts";
import {
  caughtUp as allCaughtUp,
  type FeederRun,
  feederEnv,
  feederMetric,
  numberOption,
  percentile,
  spawnFeeder,
  startFakeMarket,
  stopChild,
  storedLastCloses,
  TF_MS,
  waitForColdStart,
} from "./feeder-process.ts";
import { benchDatabase, rssMiB, startServerProcess } from "./server-process.ts";

const COINS = 400;
const CLOSE_EVERY_MS = 60_000;
const TICK_EVERY_MS = 2_000;
const RSS_TARGET_MIB = 300;
const TOKEN = "bench-internal-token-0123456789";

/** Runs the benchmark; returns a Markdown table and sets process.exitCode when a target is missed. */
export async function benchFeeder400(): Promise<string> {
  if (!realCandlesAvailable) return "skipped: ../shared/data/candles is absent";
  const minutes = numberOption("minutes", 30);
  const history = numberOption("history", 200);
  const closes = Math.ceil((minutes * 60_000) / CLOSE_EVERY_MS);
  const { fake, bases } = await startFakeMarket(COINS + 1, history, closes);
  const db = await benchDatabase();
  const sqlClient = postgres(db.url, { max: 1, onnotice: () => {} });
  let server: Awaited<ReturnType<typeof startServerProcess>> | null = null;
  const feeders: FeederRun[] = [];
  // Interrupted (Ctrl-C, a time limit): no feeder or server is left behind.
  const interrupted = () => {
    for (const f of feeders) f.child.kill("SIGKILL");
    server?.child.kill("SIGKILL");
    void db.drop().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    server = await startServerProcess(
      { DATABASE_URL: db.url, INTERNAL_TOKEN: TOKEN, STALE_AFTER: String(365 * 24 * 3600) },
      120_000,
    );
    const feedEnv = feederEnv(fake, server.internalPort, TOKEN, history);
    const main = spawnFeeder(bases.slice(0, COINS), feedEnv);
    const baseline = spawnFeeder(bases.slice(COINS), feedEnv);
    feeders.push(main, baseline);
    const firstExpected = new Map(bases.map((b) => [b, fake.closed(b).at(-history)!.openTime]));

    const storedMax = () => storedLastCloses(sqlClient);
    const caughtUp = (max: Map<string, number>) => allCaughtUp(fake, bases, max);

    // Cold start: every coin's history stored.
    const coldStartMs = await waitForColdStart(fake, bases, sqlClient, feeders, TICK_EVERY_MS);
    const rss = { main: [] as number[], baseline: [] as number[] };
    const rssAfterStart = { main: await rssMiB(main.child.pid!), baseline: await rssMiB(baseline.child.pid!) };
    const baselineBases = new Set(baseline.bases);

    // Each close's emission time, and when the database first held it.
    const emitted = new Map<string, number>();
    const lags = { main: [] as number[], baseline: [] as number[] };
    const seen = await storedMax();
    let drops = 0;
    let faults = 0;
    const end = Date.now() + minutes * 60_000;
    let nextClose = Date.now() + CLOSE_EVERY_MS;
    let nextTick = Date.now() + TICK_EVERY_MS;
    let nextDrop = Date.now() + 20_000 + Math.random() * 40_000;
    const collect = async () => {
      for (const [symbol, last] of await storedMax()) {
        const before = seen.get(symbol) ?? 0;
        for (let t = before + TF_MS; t <= last; t += TF_MS) {
          const at = emitted.get(`${symbol}|${t}`);
          if (at !== undefined) (baselineBases.has(symbol) ? lags.baseline : lags.main).push(Date.now() - at);
        }
        seen.set(symbol, last);
      }
    };
    while (Date.now() < end) {
      const now = Date.now();
      if (now >= nextClose) {
        fake.closeCandles();
        for (const b of bases) emitted.set(`${b}|${fake.closed(b).at(-1)!.openTime}`, now);
        nextClose += CLOSE_EVERY_MS;
      } else if (now >= nextTick) {
        fake.tick();
        nextTick = now + TICK_EVERY_MS;
      }
      if (now >= nextDrop) {
        drops++;
        if (drops % 3 === 0) {
          faults++;
          fake.failRest(drops % 2 === 0 ? { status: 429, headers: { "retry-after": "2" } } : { status: 503 }, {
            status: 502,
          });
        }
        fake.dropSockets();
        nextDrop = now + 20_000 + Math.random() * 40_000;
      }
      await collect();
      rss.main.push(await rssMiB(main.child.pid!));
      rss.baseline.push(await rssMiB(baseline.child.pid!));
      await new Promise((r) => setTimeout(r, 1_000));
    }
    // Wait (on the data, not a guess) for the last close to land everywhere.
    const settle = Date.now();
    while (!caughtUp(await storedMax()) && Date.now() - settle < 180_000) await new Promise((r) => setTimeout(r, 500));
    await collect();
    const rssEnd = { main: await rssMiB(main.child.pid!), baseline: await rssMiB(baseline.child.pid!) };
    const duplicates = {
      main: await feederMetric(main, "feed_push_duplicates_total"),
      baseline: await feederMetric(baseline, "feed_push_duplicates_total"),
    };
    const reconnects = {
      main: await feederMetric(main, "feed_reconnects_total"),
      baseline: await feederMetric(baseline, "feed_reconnects_total"),
    };
    const backfilled = {
      main: await feederMetric(main, "feed_backfilled_candles_total"),
      baseline: await feederMetric(baseline, "feed_backfilled_candles_total"),
    };
    const ws = fake.wsStats();

    // Every coin's stored history against the exchange's closed candles, value for value.
    const count = { main: { stored: 0, lost: 0, wrong: 0 }, baseline: { stored: 0, lost: 0, wrong: 0 } };
    for (const b of bases) {
      const into = baselineBases.has(b) ? count.baseline : count.main;
      const expected = fake.closed(b).filter((c) => c.openTime >= firstExpected.get(b)!);
      const rows = await sqlClient<
        { open_time: string; open: number; high: number; low: number; close: number; volume: number }[]
      >`SELECT open_time, open, high, low, close, volume FROM candles WHERE symbol = ${b} AND tf = '15m' AND closed
        ORDER BY open_time`;
      into.stored += rows.length;
      const byTime = new Map(rows.map((r) => [Number(r.open_time), r]));
      for (const c of expected) {
        const g = byTime.get(c.openTime);
        if (!g) into.lost++;
        else if (
          g.open !== c.open ||
          g.high !== c.high ||
          g.low !== c.low ||
          g.close !== c.close ||
          g.volume !== c.volume
        )
          into.wrong++;
      }
      into.wrong += Math.max(0, rows.length - expected.length);
    }

    const steady = (values: number[]) => ({ median: percentile(values, 50), peak: Math.max(...values) });
    const mainRss = steady(rss.main);
    const baseRss = steady(rss.baseline);
    const r0 = (x: number) => (Number.isFinite(x) ? String(Math.round(x)) : "n/a");
    const s1 = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : "n/a");
    const misses: string[] = [];
    if (mainRss.peak >= RSS_TARGET_MIB) misses.push(`steady RSS peak ${r0(mainRss.peak)} MiB ≥ ${RSS_TARGET_MIB}`);
    if (count.main.lost + count.baseline.lost > 0) misses.push("candles lost");
    if (count.main.wrong + count.baseline.wrong > 0) misses.push("candles wrong or extra");
    if (duplicates.main + duplicates.baseline > 0) misses.push("duplicate closed candles pushed");
    if (ws.breaches.length > 0) misses.push(`websocket limits broken: ${ws.breaches.slice(0, 3).join("; ")}`);
    // Two feeders: at most one connection each at a time.
    if (ws.maxOpen > feeders.length)
      misses.push(`${ws.maxOpen} websocket connections open at once for ${feeders.length} feeders`);
    if (ws.maxStreamsOnOneConnection < COINS)
      misses.push(`the 400 coins were spread over several connections (most on one: ${ws.maxStreamsOnOneConnection})`);
    if (lags.main.length === 0) misses.push("no close measured");
    if (misses.length > 0) process.exitCode = 1;

    const rows: [string, string, string, string][] = [
      ["coins", String(COINS), "1", ""],
      [
        "cold start: history stored (FEED_HISTORY candles per coin)",
        `${history} × ${COINS} in ${s1(coldStartMs)}`,
        "(same run)",
        "",
      ],
      ["RSS after the cold start (MiB)", r0(rssAfterStart.main), r0(rssAfterStart.baseline), ""],
      ["RSS steady, median (MiB)", r0(mainRss.median), r0(baseRss.median), ""],
      ["RSS steady, **peak** (MiB)", `**${r0(mainRss.peak)}**`, r0(baseRss.peak), `< ${RSS_TARGET_MIB}`],
      ["RSS at the end (MiB)", r0(rssEnd.main), r0(rssEnd.baseline), ""],
      ["closes measured", String(lags.main.length), String(lags.baseline.length), ""],
      ["close → stored lag p50", s1(percentile(lags.main, 50)), s1(percentile(lags.baseline, 50)), ""],
      ["close → stored lag p99", s1(percentile(lags.main, 99)), s1(percentile(lags.baseline, 99)), ""],
      ["close → stored lag max", s1(Math.max(...lags.main)), s1(Math.max(...lags.baseline)), ""],
      [
        "candles stored / **lost** / wrong or extra",
        `${count.main.stored} / **${count.main.lost}** / ${count.main.wrong}`,
        `${count.baseline.stored} / ${count.baseline.lost} / ${count.baseline.wrong}`,
        "lost 0, wrong 0",
      ],
      ["duplicate closed candles pushed", String(duplicates.main), String(duplicates.baseline), "0"],
      [
        "reconnects (per coin, summed) / candles backfilled over REST",
        `${reconnects.main} / ${backfilled.main}`,
        `${reconnects.baseline} / ${backfilled.baseline}`,
        "",
      ],
      ["socket drops / REST fault bursts (both feeders)", `${drops} / ${faults}`, "", ""],
      ["websocket connections at once, both feeders (most)", String(ws.maxOpen), "", `≤ ${feeders.length}`],
      [
        "streams on one connection (most)",
        String(ws.maxStreamsOnOneConnection),
        "",
        `${COINS} (limit ${WS_MAX_STREAMS_PER_CONNECTION})`,
      ],
      [
        "SUBSCRIBE/UNSUBSCRIBE messages (both) / most streams in one",
        `${ws.controlMessages} / ${ws.maxStreamsInOneMessage}`,
        "",
        "",
      ],
      [
        "incoming frames in one second on one connection (most)",
        String(ws.maxIncomingInOneSecond),
        "",
        `≤ ${WS_MAX_INCOMING_PER_SECOND}`,
      ],
      ["limit breaches (connection cut)", String(ws.breaches.length), "", "0"],
    ];
    const table = [
      `${minutes} min, 1m pacing on the 15m base, forming updates ` +
        `every ${TICK_EVERY_MS / 1000} s, drops every 20–60 s.`,
      "",
      "| measure | 400-coin feeder | 1-coin feeder (baseline, same run) | target |",
      "|---|---|---|---|",
      ...rows.map((r) => `| ${r.join(" | ")} |`),
      "",
      misses.length === 0 ? "Every target met." : `MISSED: ${misses.join("; ")}`,
    ].join("\n");
    const lagFigures = (l: number[]) => ({ p50: percentile(l, 50), p99: percentile(l, 99), n: l.length });
    const figures = {
      ...{ minutes, history, coldStartMs, rssAfterStart, rssSteady: { main: mainRss, baseline: baseRss }, rssEnd },
      lags: { main: lagFigures(lags.main), baseline: lagFigures(lags.baseline) },
      ...{ count, duplicates, reconnects, backfilled, drops, faults, ws },
    };
    console.log(`FEEDER-400 ${JSON.stringify(figures)}`);
    return table;
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    for (const f of feeders) await stopChild(f.child);
    if (server) await stopChild(server.child);
    await sqlClient.end();
    await fake.close();
    await db.drop();
  }
}

if (import.meta.main) console.log(await benchFeeder400());
