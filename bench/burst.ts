/**
 * `npm run bench -- burst [--boundaries 3] [--history 200] [--fresh-reads]` (slow: runs only when named; run it
 * under `nice` on a shared machine): the boundary burst. A server on PostgreSQL with WORKERS=2,
 * one `signals feed` on **400 coins** of the fake Binance (bench/feeder-process.ts), 100 members
 * with alerts on (each follows 50 coins on every timeframe; Telegram is the local fake Bot API),
 * and paid calls running all along (a closed loop, bench/closed-loop.ts). At each boundary every
 * coin's candle closes at the same instant; measured from that instant:
 *
 * - to the new close being answered by **every** server process: just before the close, 4
 *   keep-alive connections are pinned to each worker (its holder told by the kernel's socket
 *   table, test/support/socket-owners.ts); from the close they read the paid endpoint (8 coins a
 *   call), each worker's coins apart, until each worker has answered each coin's new close
 *   (`--fresh-reads`: the former rounds of fresh connections, 8 at a time, each group's workers
 *   read from the socket table);
 * - to each alert's arrival at the Bot API, where the API is read at once for that series (on
 *   shared keep-alive connections; `--fresh-reads`: a fresh one each): its `signal_id` must be
 *   the alert's event;
 * - every billed call the server answered per second (the closed loop's, the readers' and the
 *   alert checks', and the ledger's count beside it) over the burst window, against the last quiet
 *   seconds before it with the same callers: the readers (Readers) call as closed loops from the
 *   quiet to the end of the burst window, which is counted once it is over;
 * - with BENCH_BURST_TRACE, per 100 ms around each close: the calls answered and each process's CPU;
 * - each server process's RSS holding 400 × 5 once the run is quiet.
 *
 * Prints each figure beside its target and exits non-zero on a miss. Needs ../shared/data/candles
 * and PostgreSQL (BENCH_DATABASE_URL).
 */
import { type ChildProcess, spawn } from "node:child_process";
import http from "node:http";
import postgres from "postgres";
import type { FakeExchange } from "../test/support/fake-exchange.ts";
import { FAKE_BOT_TOKEN, type ReceivedMessage, startFakeTelegram } from "../test/support/fake-telegram.ts";
import { httpGet } from "../test/support/http-load.ts";
import { pushClosedCandles } from "../test/support/ingest-push.ts";
import { realCandlesAvailable } from "../test/support/real-candles.ts";
import { connectionOwners } from "../test/support/socket-owners.ts";
import { type ClosedLoopBucket, rateBetween } from "./closed-loop.ts";
import {
  type FeederRun,
  feederEnv,
  numberOption,
  percentile,
  spawnFeeder,
  startFakeMarket,
  stopChild,
  waitForColdStart,
} from "./feeder-process.ts";
import { descendantPids, machineBusySeconds, postgresBackendPids, processCpuSeconds } from "./proc-cpu.ts";
import {
  benchDatabase,
  internalAdminClient,
  rssMiB,
  type ServerProcess,
  startServerProcess,
} from "./server-process.ts";

const COINS = 400;
const MEMBERS = 100;
const COINS_PER_MEMBER = 50;
const TIMEFRAMES = ["15m", "30m", "1h", "4h", "1d"];
const TICK_EVERY_MS = 2_000;
const QUIET_MS = 10_000;
/** Of the quiet seconds, the last ones run the burst's readers beside the closed loop (see Readers). */
const QUIET_READERS_MS = 4_000;
/** CPU of the processes is sampled this often (a few /proc reads each time). */
const CPU_SAMPLE_MS = 100;
/** Coins per paid call (the contract's limit). */
const COINS_PER_CALL = 8;
/** Fresh-connection reads in flight at once while a burst is measured. */
const READS_AT_ONCE = 8;
const LOAD_CONNECTIONS = 4;
const BURST_LIMIT_MS = 120_000;
const TARGET_MS = 2_000;
const THROUGHPUT_KEPT = 0.8;
const RSS_TARGET_MIB = 150;
const TOKEN = "bench-burst-internal-token-01234";

interface Boundary {
  closeAt: number;
  /** Per coin and worker pid: ms from the close to the first answer showing the new close. */
  answered: Map<string, Map<number, number>>;
  /** Coins whose new prices could not be told from the old ones (left out of the figure). */
  ambiguous: number;
  /** Reads of the burst that got no 200 (a 503 while a process catches up, a timeout). */
  readsFailed: Record<string, number>;
  alerts: number[];
  alertChecks: { equal: number; differing: string[]; unconfirmed: number };
  /** The closed loop alone, in the quiet seconds before the burst's readers start (runs 1-7's baseline). */
  quietAlone: { perSecond: number; errors: number };
  /** The closed loop, quiet, beside the readers the burst also has. */
  quiet: { perSecond: number; errors: number };
  burst: { perSecond: number; errors: number; seconds: number };
  /** Every billed call answered (the closed loop's and the readers'), per second: quiet beside the readers, burst. */
  billed: { quiet: number; burst: number };
  /** Charges the ledger recorded per second in the same windows (every client; the server's own count). */
  ledger: { quiet: number; burst: number };
  /** CPU seconds per process group in each window, and the windows' lengths in seconds. */
  cpu: { quiet: Record<string, number>; burst: Record<string, number>; quietSeconds: number; burstSeconds: number };
}

/** Prices one coin may be answered with: every value the exchange has shown for a candle. */
class PriceSets {
  private readonly sets = new Map<string, Set<number>>();
  private readonly fake: FakeExchange;
  constructor(fake: FakeExchange) {
    this.fake = fake;
  }
  add(base: string, value: number): void {
    const set = this.sets.get(base) ?? new Set<number>();
    this.sets.set(base, set);
    set.add(value);
  }
  /** Adds the forming candle's latest price of every coin. */
  addForming(bases: readonly string[]): void {
    for (const b of bases) this.add(b, this.fake.forming(b).close);
  }
  has(base: string, value: number): boolean {
    return this.sets.get(base)?.has(value) ?? false;
  }
  overlaps(base: string, other: PriceSets): boolean {
    for (const v of this.sets.get(base) ?? []) if (other.has(base, v)) return true;
    return false;
  }
}

function groups<T>(items: readonly T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));
}

interface FreshRead {
  pid: number | undefined;
  status: number;
  body: string;
  /** When the answer arrived (epoch ms). */
  at: number;
}

/**
 * Paid calls at once, each on a fresh connection; which worker answered each is read from /proc
 * once for the group, while every connection is still open (a read of the kernel's socket table
 * costs tens of milliseconds on a busy host: once per call, it slowed this process's fakes).
 */
async function readFreshGroup(
  server: ServerProcess,
  queries: readonly string[],
  key: () => string,
  owners = true,
): Promise<FreshRead[]> {
  const agents = queries.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const answers = await Promise.all(
      queries.map(async (query, i) => {
        try {
          const answer = await httpGet(
            `http://127.0.0.1:${server.port}/api/v1/signals?${query}`,
            { "x-api-key": key() },
            agents[i]!,
            30_000,
          );
          return { answer, at: Date.now() };
        } catch (err) {
          // Counted by the caller as a read without an answer (status 0); the next read tries again.
          return { error: String((err as Error).message ?? err), at: Date.now() };
        }
      }),
    );
    const byPort = owners ? await connectionOwners(server.port, server.workerPids) : new Map<number, number>();
    return answers.map((a) =>
      a.answer !== undefined
        ? { pid: byPort.get(a.answer.localPort!), status: a.answer.status, body: a.answer.body, at: a.at }
        : { pid: undefined, status: 0, body: a.error ?? "", at: a.at },
    );
  } finally {
    for (const agent of agents) agent.destroy();
  }
}

type Entry = { symbol: string; price?: number; signal_id?: string | null; confirmed?: boolean };

/** A keep-alive connection whose holder (a worker's pid) was read from the socket table once. */
interface PinnedConnection {
  readonly agent: http.Agent;
  readonly base: string;
  readonly pid: number;
  readonly localPort: number;
}

/**
 * Opens keep-alive connections until each worker holds `perWorker` of them (the kernel chooses
 * the worker of a new connection), so that a burst's reads need no socket-table read: a read's
 * worker is its connection's. Run just before a close (the server drops an idle one after 5 s).
 */
async function pinConnections(
  server: ServerProcess,
  key: () => string,
  perWorker: number,
): Promise<PinnedConnection[]> {
  const pinned: PinnedConnection[] = [];
  const held = (pid: number) => pinned.filter((c) => c.pid === pid).length;
  for (let attempt = 0; attempt < 50 && server.workerPids.some((pid) => held(pid) < perWorker); attempt++) {
    const agents = Array.from({ length: READS_AT_ONCE }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const base = `http://127.0.0.1:${server.port}`;
    const answers = await Promise.all(
      agents.map((agent) =>
        httpGet(`${base}/api/v1/signals?symbols=BTC&tf=15m`, { "x-api-key": key() }, agent, 30_000).catch(
          () => undefined,
        ),
      ),
    );
    const owners = await connectionOwners(server.port, server.workerPids);
    answers.forEach((answer, i) => {
      const pid = answer?.localPort === undefined ? undefined : owners.get(answer.localPort);
      if (pid !== undefined && held(pid) < perWorker)
        pinned.push({ agent: agents[i]!, base, pid, localPort: answer!.localPort! });
      else agents[i]!.destroy();
    });
  }
  for (const pid of server.workerPids)
    if (held(pid) < perWorker) throw new Error(`could not open ${perWorker} connections to worker ${pid}`);
  return pinned;
}

/** What the pinned connections measure from a close: each worker's answers of the measured coins' new closes. */
interface Measuring {
  readonly boundary: Boundary;
  readonly measured: readonly string[];
  readonly after: PriceSets;
}

/**
 * The bench's readers: the pinned connections (4 a worker) and the alert checks' connections (8),
 * each a closed loop of billed calls from a boundary's last quiet seconds to the end of its burst
 * window. From the close the pinned connections read each worker's measured coins until that
 * worker has answered every new close, and the alert checks' connections check each arriving
 * alert first; otherwise they read the market (8 coins a call) and one series a call, as they do
 * in the quiet. So the quiet window the burst is compared with has the same clients calling as
 * fast as the server answers them: runs 1-7 had the closed loop's 4 connections alone in the
 * quiet and 20 in the burst, and the readers idle in the burst's last second. Every billed
 * answer's time goes into `billed`.
 */
class Readers {
  /** Set at the close. */
  measuring: Measuring | null = null;
  /** Answer times of the pinned connections' billed calls, per worker (the trace shows which worker slowed). */
  readonly pinnedAnswers = new Map<number, number[]>();
  /** Reads not answered 200 outside the measurement (its own are counted in the boundary). */
  failed = 0;
  private over = false;
  private readonly alertChecks: (() => Promise<void>)[] = [];
  private readonly running: Promise<void>;
  private readonly alivePerWorker = new Map<number, number>();

  private readonly alertCheckAgent: http.Agent;
  private readonly port: number;
  private readonly key: () => string;
  private readonly billed: number[];

  constructor(
    pinned: readonly PinnedConnection[],
    alertCheckAgent: http.Agent,
    port: number,
    bases: readonly string[],
    key: () => string,
    billed: number[],
  ) {
    this.alertCheckAgent = alertCheckAgent;
    this.port = port;
    this.key = key;
    this.billed = billed;
    const calls = groups(bases, COINS_PER_CALL).map((coins) => `symbols=${coins.join(",")}&tf=15m`);
    const series = bases.flatMap((b) => TIMEFRAMES.map((tf) => `symbols=${b}&tf=${tf}`));
    for (const c of pinned) this.alivePerWorker.set(c.pid, (this.alivePerWorker.get(c.pid) ?? 0) + 1);
    this.running = Promise.all([
      ...pinned.map((c) => this.pinnedLoop(c, calls)),
      ...Array.from({ length: READS_AT_ONCE }, () => this.alertCheckLoop(series)),
    ]).then(() => undefined);
  }

  /** Queues the check of an arriving alert; resolves once it is done. */
  checkAlert(check: () => Promise<void>): Promise<void> {
    return new Promise((resolve) => this.alertChecks.push(() => check().finally(resolve)));
  }

  /** Resolves once every worker has answered every measured coin's new close, or the time is up. */
  async answered(): Promise<void> {
    const m = this.measuring!;
    const pending = () =>
      [...this.alivePerWorker].some(
        ([pid, alive]) => alive > 0 && m.measured.some((b) => !m.boundary.answered.get(b)!.has(pid)),
      );
    while (pending() && Date.now() - m.boundary.closeAt < BURST_LIMIT_MS) await new Promise((r) => setTimeout(r, 10));
  }

  /** Stops every loop after its call in flight (the queued alert checks run first). */
  async stop(): Promise<void> {
    this.over = true;
    await this.running;
  }

  private answeredBy(pid: number): number[] {
    const list = this.pinnedAnswers.get(pid) ?? [];
    this.pinnedAnswers.set(pid, list);
    return list;
  }

  /** A prime stride: successive reads go to coins far apart. */
  private static next(queries: readonly string[], turn: number): string {
    return queries[(turn * 7_919) % queries.length]!;
  }

  private async pinnedLoop(connection: PinnedConnection, calls: readonly string[]): Promise<void> {
    for (let turn = 0; !this.over; turn++) {
      const m = this.measuring;
      const left = m?.measured.filter((b) => !m.boundary.answered.get(b)!.has(connection.pid)) ?? [];
      if (m && left.length > 0 && Date.now() - m.boundary.closeAt < BURST_LIMIT_MS) {
        const coins = groups(left, COINS_PER_CALL);
        const read = await readPinned(connection, `symbols=${coins[turn % coins.length]!.join(",")}&tf=15m`, this.key);
        if (read.status !== 200) {
          m.boundary.readsFailed[read.why] = (m.boundary.readsFailed[read.why] ?? 0) + 1;
          if (read.status === -1) break;
          continue;
        }
        this.billed.push(read.at);
        this.answeredBy(connection.pid).push(read.at);
        for (const entry of (JSON.parse(read.body) as { signals: Entry[] }).signals) {
          const seen = m.boundary.answered.get(entry.symbol);
          if (seen && !seen.has(connection.pid) && entry.price !== undefined && m.after.has(entry.symbol, entry.price))
            seen.set(connection.pid, read.at - m.boundary.closeAt);
        }
        continue;
      }
      const read = await readPinned(connection, Readers.next(calls, turn), this.key);
      if (read.status === 200) {
        this.billed.push(read.at);
        this.answeredBy(connection.pid).push(read.at);
      } else this.failed++;
      if (read.status === -1) break;
    }
    // A connection the server closed no longer tells its worker: it measures nothing more.
    this.alivePerWorker.set(connection.pid, this.alivePerWorker.get(connection.pid)! - 1);
  }

  private async alertCheckLoop(series: readonly string[]): Promise<void> {
    for (let turn = 0; !this.over || this.alertChecks.length > 0; turn++) {
      const check = this.alertChecks.shift();
      if (check) {
        await check();
        continue;
      }
      const status = await httpGet(
        `http://127.0.0.1:${this.port}/api/v1/signals?${Readers.next(series, turn)}`,
        { "x-api-key": this.key() },
        this.alertCheckAgent,
        30_000,
      ).then(
        (answer) => answer.status,
        () => 0,
      );
      if (status === 200) this.billed.push(Date.now());
      else this.failed++;
    }
  }
}

/**
 * The former instrument (`--fresh-reads`): rounds of reads on fresh connections, 8 at a time,
 * each group's workers read from the socket table, until every worker has answered every
 * measured coin's new close. A coin is found on a worker only when a round's read lands there.
 */
async function readFreshUntilAnswered(
  server: ServerProcess,
  measured: readonly string[],
  boundary: Boundary,
  after: PriceSets,
  key: () => string,
  billed: number[],
): Promise<void> {
  const pending = () => measured.filter((b) => boundary.answered.get(b)!.size < server.workerPids.length);
  while (pending().length > 0 && Date.now() - boundary.closeAt < BURST_LIMIT_MS) {
    const batch = groups(pending(), COINS_PER_CALL);
    for (let i = 0; i < batch.length; i += READS_AT_ONCE) {
      const group = batch.slice(i, i + READS_AT_ONCE).map((coins) => `symbols=${coins.join(",")}&tf=15m`);
      for (const read of await readFreshGroup(server, group, key)) {
        if (read.status === 200) billed.push(read.at);
        if (read.status !== 200 || read.pid === undefined) {
          const why = read.status === 0 ? read.body.slice(0, 60) : `HTTP ${read.status}`;
          boundary.readsFailed[why] = (boundary.readsFailed[why] ?? 0) + 1;
          continue;
        }
        for (const entry of (JSON.parse(read.body) as { signals: Entry[] }).signals) {
          const seen = boundary.answered.get(entry.symbol);
          if (seen && !seen.has(read.pid) && entry.price !== undefined && after.has(entry.symbol, entry.price))
            seen.set(read.pid, read.at - boundary.closeAt);
        }
      }
    }
  }
}

/** One paid read on a pinned connection; status -1 when the server had closed it (its worker is then unknown). */
async function readPinned(
  connection: PinnedConnection,
  query: string,
  key: () => string,
): Promise<{ status: number; body: string; at: number; why: string }> {
  try {
    const answer = await httpGet(
      `${connection.base}/api/v1/signals?${query}`,
      { "x-api-key": key() },
      connection.agent,
      30_000,
    );
    const at = Date.now();
    if (answer.localPort !== connection.localPort) return { status: -1, body: "", at, why: "connection replaced" };
    return { status: answer.status, body: answer.body, at, why: `HTTP ${answer.status}` };
  } catch (err) {
    return { status: 0, body: "", at: Date.now(), why: String((err as Error).message ?? err).slice(0, 60) };
  }
}

/** Per-process CPU time sampled from /proc every CPU_SAMPLE_MS, so any window can be read after the fact. */
class CpuSampler {
  private readonly groups = new Map<string, Set<number>>();
  private readonly samples = new Map<number, { at: number; seconds: number }[]>();
  private readonly machine: { at: number; seconds: number }[] = [];
  private readonly timer: NodeJS.Timeout;
  constructor() {
    this.timer = setInterval(() => this.sample(), CPU_SAMPLE_MS);
    this.timer.unref();
  }
  /** Adds processes to a group (a group's CPU is the sum of its processes'). */
  track(group: string, pids: readonly number[]): void {
    const set = this.groups.get(group) ?? new Set<number>();
    this.groups.set(group, set);
    for (const pid of pids) set.add(pid);
  }
  sample(): void {
    const at = Date.now();
    for (const pids of this.groups.values())
      for (const pid of pids) {
        const seconds = processCpuSeconds(pid);
        if (seconds === null) continue;
        const list = this.samples.get(pid) ?? [];
        this.samples.set(pid, list);
        list.push({ at, seconds });
      }
    this.machine.push({ at, seconds: machineBusySeconds() });
  }
  /** CPU seconds of each group within [from, to] (the samples nearest each end), and of the whole machine. */
  between(from: number, to: number): Record<string, number> {
    const used = (list: readonly { at: number; seconds: number }[] | undefined) => {
      if (!list || list.length === 0) return 0;
      const nearest = (t: number) =>
        list.reduce((best, s) => (Math.abs(s.at - t) < Math.abs(best.at - t) ? s : best)).seconds;
      return nearest(to) - nearest(from);
    };
    const out: Record<string, number> = {};
    for (const [group, pids] of this.groups)
      out[group] = [...pids].reduce((sum, pid) => sum + used(this.samples.get(pid)), 0);
    out[MACHINE] = used(this.machine);
    return out;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

const MACHINE = "the whole machine (both cores, every process)";

function startLoad(
  port: number,
  keys: string[],
  symbols: string[],
): { child: ChildProcess; buckets: ClosedLoopBucket[] } {
  const url = `http://127.0.0.1:${port}/api/v1/signals?symbols=${symbols.join(",")}&tf=15m`;
  const child = spawn(
    process.execPath,
    ["bench/closed-loop.ts", JSON.stringify({ url, connections: LOAD_CONNECTIONS, keys })],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const buckets: ClosedLoopBucket[] = [];
  let pending = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    pending += d;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const line of lines) buckets.push(JSON.parse(line) as ClosedLoopBucket);
  });
  return { child, buckets };
}

async function createMembers(internalPort: number, bases: string[]): Promise<string[]> {
  const admin = internalAdminClient(internalPort, TOKEN);
  const keys: string[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    const created = await admin.createAccount({ email: `burst-member-${i}@example.test`, plan: "node" });
    // Member i follows 50 consecutive coins from its own starting point: every coin has followers.
    const symbols = Array.from({ length: COINS_PER_MEMBER }, (_, k) => bases[(i * 4 + k) % COINS]!);
    await admin.setAlerts({
      accountId: created.account!.accountId,
      alerts: { chatId: String(5_000 + i), symbols, timeframes: TIMEFRAMES },
    });
    keys.push(created.apiKey);
  }
  return keys;
}

/** Billed calls the ledger recorded within (from, to] (epoch ms): every client's, counted by the database. */
async function chargesBetween(sql: postgres.Sql, from: number, to: number): Promise<number> {
  const [row] = await sql<{ n: string }[]>`
    SELECT count(*) AS n FROM ledger_entries
     WHERE kind = 'charge' AND created_at > to_timestamp(${from / 1000}) AND created_at <= to_timestamp(${to / 1000})`;
  return Number(row!.n);
}

/** BENCH_BURST_TRACE: per 100 ms around a close, the calls answered and the CPU of each process group. */
function traceBurst(
  buckets: readonly ClosedLoopBucket[],
  billed: readonly number[],
  pinnedAnswers: ReadonlyMap<number, readonly number[]>,
  cpu: CpuSampler,
  from: number,
  to: number,
): void {
  for (let t = from; t < to; t += 100) {
    const loop = rateBetween(buckets, t, t + 100).ok;
    const reads = billed.filter((at) => at > t && at <= t + 100).length;
    const perWorker = [...pinnedAnswers.values()].map((list) => list.filter((at) => at > t && at <= t + 100).length);
    const used = Object.entries(cpu.between(t, t + 100))
      .map(([group, s]) => `${group.split(" ")[0]} ${Math.round(s * 1000)}`)
      .join(", ");
    console.error(
      `[burst trace] +${t - from - 1_000} ms: closed loop ${loop}, readers ${reads} ` +
        `(pinned, per worker: ${perWorker.join("/")}); CPU ms ${used}`,
    );
  }
}

/** Runs the benchmark; returns a Markdown table and sets process.exitCode when a target is missed. */
export async function benchBurst(): Promise<string> {
  if (!realCandlesAvailable) return "skipped: ../shared/data/candles is absent";
  const boundaries = numberOption("boundaries", 3);
  const history = numberOption("history", 200);
  // The instrument of runs 1-6: every read on a fresh connection, its worker read from the socket table.
  const freshReads = process.argv.includes("--fresh-reads");
  const { fake, bases } = await startFakeMarket(COINS, history, boundaries);
  const telegram = await startFakeTelegram();
  const db = await benchDatabase();
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  let server: ServerProcess | null = null;
  let feeder: FeederRun | null = null;
  let load: ReturnType<typeof startLoad> | null = null;
  const cpu = new CpuSampler();
  const interrupted = () => {
    feeder?.child.kill("SIGKILL");
    load?.child.kill("SIGKILL");
    server?.child.kill("SIGKILL");
    void db.drop().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    server = await startServerProcess(
      {
        DATABASE_URL: db.url,
        INTERNAL_TOKEN: TOKEN,
        WORKERS: "2",
        STALE_AFTER: String(365 * 24 * 3600),
        // The exchange's closes lie in the past (its clock runs ahead of nothing): they must still alert.
        ALERT_MAX_DELAY: String(7 * 24 * 3600),
        TELEGRAM_API_BASE: telegram.apiBase,
        TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
        FAILED_KEY_LIMIT: "1000000",
        DAILY_CAP: "10000000",
        MONTHLY_GRANT: "100000000",
      },
      120_000,
    );
    if (server.workerPids.length !== 2)
      throw new Error(`expected 2 workers, the server reported ${JSON.stringify(server.workerPids)}`);
    // Each worker's start-up GC (server/startup-gc.ts), as the worker logged it: pause and RSS.
    for (const line of server.startLog.split("\n").filter((l) => l.includes('"start-up memory-reducing GC"')))
      console.error(`[burst] ${line}`);
    const keys = await createMembers(server.internalPort, bases);
    // The history goes in as an import would (the feeder's cold start is bench/feeder-400.ts's
    // subject, and on a shared machine it takes minutes); the feeder then resumes from it and streams.
    const historyStarted = Date.now();
    const imported = bases.flatMap((symbol) =>
      fake
        .closed(symbol)
        .slice(-history)
        .map((candle) => ({ symbol, candle })),
    );
    await pushClosedCandles(`http://127.0.0.1:${server.internalPort}`, TOKEN, "backfill", "15m", imported);
    feeder = spawnFeeder(bases, feederEnv(fake, server.internalPort, TOKEN, history));
    await waitForColdStart(fake, bases, sql, [feeder], TICK_EVERY_MS);
    while (fake.wsStats().maxStreamsOnOneConnection < COINS) {
      if (feeder.child.exitCode !== null)
        throw new Error(`the feeder exited ${feeder.child.exitCode}:\n${feeder.logs()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const coldStartMs = Date.now() - historyStarted;
    console.error(
      `[burst] history of ${history} × ${COINS} candles stored and every ` +
        `coin streaming after ${(coldStartMs / 1000).toFixed(1)} s`,
    );
    const undelivered = async () =>
      Number(
        (await sql<{ n: string }[]>`SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL AND failed_at IS NULL`)[0]!
          .n,
      );

    load = startLoad(server.port, keys.slice(0, 16), bases.slice(0, COINS_PER_CALL));
    /** Answer times of the bench's own billed calls answered 200 (its readers' and alert checks'). */
    const billed: number[] = [];
    cpu.track("lead worker (applies, commits, sends the alerts)", [server.workerPids[0]!]);
    cpu.track("follower worker", [server.workerPids[1]!]);
    cpu.track("server's primary process", [server.child.pid!]);
    cpu.track("feeder (400 coins)", descendantPids(feeder.child.pid!));
    cpu.track("closed-loop client", [load.child.pid!]);
    cpu.track("this bench (fake exchange, fake Bot API, readers)", [process.pid]);
    const readerKeys = keys.slice(16);
    let readerTurn = 0;
    const readerKey = () => readerKeys[readerTurn++ % readerKeys.length]!;
    const rss = new Map<number, number[]>(server.workerPids.map((pid) => [pid, []]));
    const sampleRss = async () => {
      for (const [pid, values] of rss) values.push(await rssMiB(pid));
    };

    let current: Boundary | null = null;
    let checks: Promise<void>[] = [];
    const alertCheckAgent = new http.Agent({ keepAlive: true, maxSockets: READS_AT_ONCE });
    const checkAlert = async (message: ReceivedMessage, boundary: Boundary) => {
      const [symbol, tf] = (message.eventId ?? "").split("-");
      // Which process answered is not needed here: no read of the socket table (one per alert,
      // hundreds at once, took the host's CPU and delayed this process's own reads). Every process
      // must answer the alert's signal, so the checks share keep-alive connections (whichever
      // workers hold them) instead of opening one per alert, as --fresh-reads still does.
      const query = `symbols=${symbol}&tf=${tf}`;
      const read = freshReads
        ? (await readFreshGroup(server!, [query], readerKey, false))[0]!
        : await httpGet(
            `http://127.0.0.1:${server!.port}/api/v1/signals?${query}`,
            { "x-api-key": readerKey() },
            alertCheckAgent,
            30_000,
          ).catch((err: unknown) => ({ status: 0, body: String(err) }));
      if (read.status === 200) billed.push(Date.now());
      const entry = read.status === 200 ? (JSON.parse(read.body) as { signals?: Entry[] }).signals?.[0] : undefined;
      if (read.status !== 200 || !entry) boundary.alertChecks.differing.push(`${message.eventId}: HTTP ${read.status}`);
      else if (entry.signal_id === message.eventId) boundary.alertChecks.equal++;
      else if (entry.confirmed === false) boundary.alertChecks.unconfirmed++;
      else boundary.alertChecks.differing.push(`${message.eventId}: the API answered ${entry.signal_id}`);
    };
    let readers: Readers | null = null;
    telegram.onReceived((message) => {
      const boundary = current;
      if (!boundary || !readers) return;
      boundary.alerts.push(Date.now() - boundary.closeAt);
      checks.push(readers.checkAlert(() => checkAlert(message, boundary)));
    });

    const results: Boundary[] = [];
    let before = new PriceSets(fake);
    for (const b of bases) before.add(b, fake.closed(b).at(-1)!.close);
    before.addForming(bases);
    for (let n = 0; n < boundaries; n++) {
      // Quiet: forming updates every 2 s, paid calls running, nothing closing; for its last
      // seconds the burst's readers run too (Readers), through to the end of the burst window.
      const quietFrom = Date.now();
      let lastTick = quietFrom;
      const quietUntil = async (until: number) => {
        while (Date.now() < until) {
          if (Date.now() - lastTick >= TICK_EVERY_MS) {
            fake.tick();
            before.addForming(bases);
            lastTick = Date.now();
          }
          await sampleRss();
          await new Promise((r) => setTimeout(r, 250));
        }
      };
      // Backends are opened as the server needs them: tracked again at each boundary.
      cpu.track("PostgreSQL (this database's backends)", postgresBackendPids(new URL(db.url).pathname.slice(1)));
      await quietUntil(quietFrom + QUIET_MS - QUIET_READERS_MS);
      const pinFrom = Date.now();
      const pinned = freshReads ? [] : await pinConnections(server, readerKey, READS_AT_ONCE / 2);
      const readersFrom = Date.now();
      readers = new Readers(pinned, alertCheckAgent, server.port, bases, readerKey, billed);
      await quietUntil(readersFrom + QUIET_READERS_MS);
      const after = new PriceSets(fake);
      const boundary: Boundary = {
        closeAt: Date.now(),
        answered: new Map(bases.map((b) => [b, new Map()])),
        ambiguous: 0,
        readsFailed: {},
        alerts: [],
        alertChecks: { equal: 0, differing: [], unconfirmed: 0 },
        quietAlone: { perSecond: 0, errors: 0 },
        quiet: { perSecond: 0, errors: 0 },
        burst: { perSecond: 0, errors: 0, seconds: 0 },
        billed: { quiet: 0, burst: 0 },
        ledger: { quiet: 0, burst: 0 },
        cpu: { quiet: {}, burst: {}, quietSeconds: 0, burstSeconds: 0 },
      };
      current = boundary;
      // The monotonic clock too: a `--cpu-prof` profile's sample times are on it (BENCH_NODE_FLAGS;
      // bench/cpu-profile-table.ts --from).
      console.error(
        `[burst] boundary ${n + 1}: every coin closes now (${boundary.closeAt}; monotonic ` +
          `${process.hrtime.bigint() / 1000n} µs)`,
      );
      fake.closeCandles();
      for (const b of bases) after.add(b, fake.closed(b).at(-1)!.close);
      after.addForming(bases);
      const measured = bases.filter((b) => !after.overlaps(b, before));
      boundary.ambiguous = COINS - measured.length;
      readers.measuring = { boundary, measured, after };

      // Reads until every worker has answered every measured coin's new close.
      let burstEnd = boundary.closeAt + TARGET_MS;
      let pinnedAnswers = new Map<number, number[]>();
      const ticking = setInterval(() => {
        fake.tick();
        after.addForming(bases);
      }, TICK_EVERY_MS);
      try {
        if (pinned.length > 0) await readers.answered();
        else await readFreshUntilAnswered(server, measured, boundary, after, readerKey, billed);
        const answeredAt = Math.max(0, ...measured.flatMap((b) => [...boundary.answered.get(b)!.values()]));
        // Every event is committed with its outbox rows before the API shows its close: now wait for delivery.
        const deliveredBy = Date.now() + BURST_LIMIT_MS;
        while ((await undelivered()) > 0 && Date.now() < deliveredBy) await new Promise((r) => setTimeout(r, 100));
        current = null;
        await Promise.all(checks);
        checks = [];
        burstEnd = boundary.closeAt + Math.max(TARGET_MS, answeredAt, ...boundary.alerts);
        // The readers and the closed loop keep calling to the window's end (it lasts at least
        // TARGET_MS); it is counted once the closed loop has reported it (a line every 100 ms).
        // Runs 1-7 counted it at once, dividing the calls of the first ~1.4 s by 2 s.
        await new Promise((r) => setTimeout(r, Math.max(0, burstEnd - Date.now())));
      } finally {
        clearInterval(ticking);
        await readers.stop();
        if (readers.failed > 0) boundary.readsFailed["readers' other calls"] = readers.failed;
        pinnedAnswers = readers.pinnedAnswers;
        readers = null;
        for (const connection of pinned) connection.agent.destroy();
      }
      await new Promise((r) => setTimeout(r, 3 * CPU_SAMPLE_MS));
      const pending = () => measured.filter((b) => boundary.answered.get(b)!.size < server!.workerPids.length);
      const answeredAt = Math.max(0, ...measured.flatMap((b) => [...boundary.answered.get(b)!.values()]));
      // The quiet window with the readers starts once their first calls are answered.
      const quietWindow = [readersFrom + 250, boundary.closeAt] as const;
      const burstWindow = [boundary.closeAt, burstEnd] as const;
      const alone = rateBetween(load.buckets, quietFrom + TICK_EVERY_MS, pinFrom);
      const quiet = rateBetween(load.buckets, ...quietWindow);
      const burst = rateBetween(load.buckets, ...burstWindow);
      boundary.quietAlone = { perSecond: alone.perSecond, errors: alone.errors };
      boundary.quiet = { perSecond: quiet.perSecond, errors: quiet.errors };
      boundary.burst = {
        perSecond: burst.perSecond,
        errors: burst.errors,
        seconds: (burstEnd - boundary.closeAt) / 1000,
      };
      const seconds = (w: readonly [number, number]) => (w[1] - w[0]) / 1000;
      const readsIn = (w: readonly [number, number]) => billed.filter((at) => at > w[0] && at <= w[1]).length;
      boundary.billed = {
        quiet: quiet.perSecond + readsIn(quietWindow) / seconds(quietWindow),
        burst: burst.perSecond + readsIn(burstWindow) / seconds(burstWindow),
      };
      boundary.ledger = {
        quiet: (await chargesBetween(sql, ...quietWindow)) / seconds(quietWindow),
        burst: (await chargesBetween(sql, ...burstWindow)) / seconds(burstWindow),
      };
      boundary.cpu = {
        quiet: cpu.between(...quietWindow),
        burst: cpu.between(...burstWindow),
        quietSeconds: seconds(quietWindow),
        burstSeconds: seconds(burstWindow),
      };
      if (process.env.BENCH_BURST_TRACE) {
        // Lead first, as the workers are listed.
        const byWorker = new Map(server.workerPids.map((pid) => [pid, pinnedAnswers.get(pid) ?? []]));
        traceBurst(load.buckets, billed, byWorker, cpu, boundary.closeAt - 1_000, burstEnd);
      }
      results.push(boundary);
      before = after;
      console.error(
        `[burst] boundary ${n + 1}/${boundaries}: answered by every process in ${answeredAt} ` +
          `ms (${pending().length} coins never), ${boundary.alerts.length} alerts (p99 ` +
          `${percentile(boundary.alerts, 99)} ms), closed loop ${alone.perSecond.toFixed(0)} alone, ` +
          `${quiet.perSecond.toFixed(0)} beside the readers → ${burst.perSecond.toFixed(0)}/s; every billed call ` +
          `${boundary.billed.quiet.toFixed(0)} → ${boundary.billed.burst.toFixed(0)}/s (ledger ` +
          `${boundary.ledger.quiet.toFixed(0)} → ${boundary.ledger.burst.toFixed(0)}/s), failed reads ` +
          `${JSON.stringify(boundary.readsFailed)}`,
      );
    }

    alertCheckAgent.destroy();
    // Steady memory: the lowest RSS over 10 s with the paid load stopped.
    await stopChild(load.child);
    for (const values of rss.values()) values.length = 0;
    const steadyFrom = Date.now();
    while (Date.now() - steadyFrom < QUIET_MS) {
      await sampleRss();
      await new Promise((r) => setTimeout(r, 500));
    }
    return report({
      results,
      rss,
      coldStartMs,
      history,
      errorsAll: load.buckets.reduce((s, b) => s + b.errors, 0),
      firstError: load.buckets.find((b) => b.firstError)?.firstError ?? null,
      server,
    });
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
    if (load) await stopChild(load.child);
    if (feeder) await stopChild(feeder.child);
    if (server) await stopChild(server.child);
    await sql.end();
    await telegram.close();
    await fake.close();
    cpu.stop();
    await db.drop();
  }
}

function report(run: {
  results: Boundary[];
  rss: Map<number, number[]>;
  coldStartMs: number;
  history: number;
  errorsAll: number;
  firstError: string | null;
  server: ServerProcess;
}): string {
  const { results } = run;
  const everyProcess = results.flatMap((r) =>
    [...r.answered.values()].filter((m) => m.size === run.server.workerPids.length).map((m) => Math.max(...m.values())),
  );
  const unanswered = results.reduce(
    (s, r) => s + [...r.answered.values()].filter((m) => m.size < run.server.workerPids.length).length - r.ambiguous,
    0,
  );
  const alerts = results.flatMap((r) => r.alerts);
  const differing = results.flatMap((r) => r.alertChecks.differing);
  const equal = results.reduce((s, r) => s + r.alertChecks.equal, 0);
  const unconfirmed = results.reduce((s, r) => s + r.alertChecks.unconfirmed, 0);
  // The judged share: every billed call the server answered, burst against quiet with the same clients.
  const kept = results.map((r) => r.billed.burst / r.billed.quiet);
  const loopKept = results.map((r) => r.burst.perSecond / r.quiet.perSecond);
  const loopAloneKept = results.map((r) => r.burst.perSecond / r.quietAlone.perSecond);
  const ledgerKept = results.map((r) => r.ledger.burst / r.ledger.quiet);
  const burstErrors = results.reduce((s, r) => s + r.burst.errors, 0);
  const steady = [...run.rss].map(([pid, values]) => ({ pid, mib: Math.min(...values) }));
  const ms = (x: number) => (Number.isFinite(x) ? `${Math.round(x)} ms` : "n/a");
  const misses: string[] = [];
  if (!(percentile(everyProcess, 99) < TARGET_MS))
    misses.push(`close → answered by every process p99 ${ms(percentile(everyProcess, 99))} ≥ ${TARGET_MS} ms`);
  if (unanswered > 0)
    misses.push(`${unanswered} coin closes never answered by every process within ${BURST_LIMIT_MS / 1000} s`);
  if (alerts.length === 0) misses.push("no alert measured");
  else if (!(percentile(alerts, 99) < TARGET_MS))
    misses.push(`close → alert p99 ${ms(percentile(alerts, 99))} ≥ ${TARGET_MS} ms`);
  if (differing.length > 0)
    misses.push(
      `${differing.length} alerts differ from the API at their arrival (first: ${differing.slice(0, 3).join("; ")})`,
    );
  if (Math.min(...kept) < THROUGHPUT_KEPT)
    misses.push(
      `paid calls kept ${Math.min(...kept).toFixed(2)} of their quiet throughput in a burst (< ${THROUGHPUT_KEPT})`,
    );
  if (burstErrors > 0 || run.errorsAll > 0)
    misses.push(`paid calls failed: ${run.errorsAll} (first: ${run.firstError})`);
  for (const s of steady)
    if (!(s.mib < RSS_TARGET_MIB)) misses.push(`worker ${s.pid} holds ${Math.round(s.mib)} MiB ≥ ${RSS_TARGET_MIB}`);
  if (misses.length > 0) process.exitCode = 1;

  const perBoundary = results.map((r, i) => {
    const every = [...r.answered.values()]
      .filter((m) => m.size === run.server.workerPids.length)
      .map((m) => Math.max(...m.values()));
    const failed =
      Object.entries(r.readsFailed)
        .map(([why, n]) => `${n} × ${why}`)
        .join(", ") || "0";
    return (
      `| ${i + 1} | ${ms(percentile(every, 50))} / ${ms(percentile(every, 99))} / ${ms(Math.max(...every))} ` +
      `| ${r.ambiguous} | ${failed} | ${r.alerts.length}: ${ms(percentile(r.alerts, 50))} / ` +
      `${ms(percentile(r.alerts, 99))} | ${r.billed.quiet.toFixed(0)} → ${r.billed.burst.toFixed(0)} /s ` +
      `(${(r.billed.burst / r.billed.quiet).toFixed(2)} ×) | ` +
      `${r.ledger.quiet.toFixed(0)} → ${r.ledger.burst.toFixed(0)} /s ` +
      `(${(r.ledger.burst / r.ledger.quiet).toFixed(2)} ×) | ${r.quiet.perSecond.toFixed(0)} → ` +
      `${r.burst.perSecond.toFixed(0)} /s (${(r.burst.perSecond / r.quiet.perSecond).toFixed(2)} ×) | ` +
      `${r.quietAlone.perSecond.toFixed(0)} → ${r.burst.perSecond.toFixed(0)} /s ` +
      `(${(r.burst.perSecond / r.quietAlone.perSecond).toFixed(2)} ×) | ${r.burst.seconds.toFixed(1)} s |`
    );
  });
  const rows: [string, string, string][] = [
    [
      "close → new close answered by **every** server process (both workers), p50 / p99 / max",
      `${ms(percentile(everyProcess, 50))} / **${ms(percentile(everyProcess, 99))}** ` +
        `/ ${ms(Math.max(...everyProcess))} (${everyProcess.length} coin closes)`,
      `p99 < ${TARGET_MS} ms`,
    ],
    ...run.server.workerPids.map((pid, i): [string, string, string] => {
      const mine = results.flatMap((r) =>
        [...r.answered.values()].map((m) => m.get(pid)).filter((v): v is number => v !== undefined),
      );
      return [
        `… answered by the ${i === 0 ? "lead (applies and commits)" : "follower (reloads the commit)"}, p50 / p99`,
        `${ms(percentile(mine, 50))} / ${ms(percentile(mine, 99))}`,
        "",
      ];
    }),
    [
      "close → alert at the Bot API, p50 / p99 / max",
      `${ms(percentile(alerts, 50))} / **${ms(percentile(alerts, 99))}** ` +
        `/ ${ms(Math.max(...alerts))} (${alerts.length} alerts)`,
      `p99 < ${TARGET_MS} ms`,
    ],
    [
      "alerts equal to the API at their arrival / differing / API unconfirmed by then",
      `${equal} / **${differing.length}** / ${unconfirmed}`,
      "0 differing",
    ],
    [
      "billed calls answered per second (every client: closed loop, readers, alert checks), " +
        "burst / quiet with the same readers, lowest boundary",
      `**${Math.min(...kept).toFixed(2)} ×** (${kept.map((k) => k.toFixed(2)).join(", ")})`,
      `≥ ${THROUGHPUT_KEPT} ×`,
    ],
    [
      "… the same counted by the ledger (charges' rows in each window)",
      ledgerKept.map((k) => `${k.toFixed(2)} ×`).join(", "),
      "",
    ],
    [
      "… the closed loop's 4 connections alone, burst / quiet beside the same readers",
      loopKept.map((k) => `${k.toFixed(2)} ×`).join(", "),
      "",
    ],
    [
      "… the closed loop, burst / quiet without the readers (runs 1-7's figure)",
      loopAloneKept.map((k) => `${k.toFixed(2)} ×`).join(", "),
      "",
    ],
    ["paid calls failed (whole run)", String(run.errorsAll), "0"],
    ...steady.map((s, i): [string, string, string] => [
      `RSS of worker ${i + 1} holding 400 × 5, steady (lowest over 10 s without load)`,
      `**${Math.round(s.mib)} MiB**`,
      `< ${RSS_TARGET_MIB} MiB`,
    ]),
    [
      "set-up: history imported, the feeder leading and streaming every coin",
      `${run.history} × ${COINS} candles, ${(run.coldStartMs / 1000).toFixed(1)} s`,
      "",
    ],
  ];
  return [
    `${COINS} coins on the 15m base, ${MEMBERS} members (${COINS_PER_MEMBER} coins × ${TIMEFRAMES.length} ` +
      `timeframes each), WORKERS=2 on PostgreSQL, paid calls from ${LOAD_CONNECTIONS} closed-loop ` +
      `connections (${COINS_PER_CALL} coins a call), ${results.length} boundaries.`,
    "",
    "| measure | value | target |",
    "|---|---|---|",
    ...rows.map((r) => `| ${r.join(" | ")} |`),
    "",
    "| boundary | every process: p50 / p99 / max | coins left out (price not telling) " +
      "| burst reads without a 200 | alerts: n: p50 / p99 | every billed call, quiet → burst | ledger's charges " +
      "| closed loop beside the readers | closed loop alone in the quiet | burst window |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...perBoundary,
    "",
    "CPU per process group, % of one core (quiet with the readers → burst window), and CPU-s in the burst:",
    "",
    `| process | ${results.map((_, i) => `boundary ${i + 1}`).join(" | ")} |`,
    `|---|${results.map(() => "---|").join("")}`,
    ...Object.keys(results[0]?.cpu.burst ?? {}).map(
      (group) =>
        `| ${group} | ${results
          .map((r) => {
            const pct = (sec: number, len: number) => `${Math.round((100 * sec) / len)} %`;
            return (
              `${pct(r.cpu.quiet[group]!, r.cpu.quietSeconds)} → ${pct(r.cpu.burst[group]!, r.cpu.burstSeconds)} ` +
              `(${r.cpu.burst[group]!.toFixed(2)} s)`
            );
          })
          .join(" | ")} |`,
    ),
    "",
    misses.length === 0 ? "Every target met." : `MISSED: ${misses.join("; ")}`,
  ].join("\n");
}

if (import.meta.main) console.log(await benchBurst());
