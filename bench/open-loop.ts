/**
 * An open-loop load generator: requests are sent on a fixed schedule (`rate` per second,
 * whatever the server does), and each request's latency is measured from the moment it was
 * SCHEDULED, not the moment it actually left. A closed-loop tool (wrk, autocannon) waits for an
 * answer before sending the next request on a connection, so a slow answer delays the requests
 * behind it and they are never measured as late ("coordinated omission"); here a request that
 * could not be sent on time because the server (or this process) was busy counts its wait.
 *
 * Runs in its own process (so it never competes with the server's event loop):
 *
 *   node bench/open-loop.ts
 *   '{"url":"http://127.0.0.1:8080/path","rate":1000,"seconds":5,"connections":64,"keys":["sig_live_…"]}'
 *
 * prints one JSON line: { sent, ok, errors, p50, p90, p99, max (ms), firstError }.
 * The keys, if any, are sent in turn as `x-api-key` (the paid endpoint bills each call).
 */
import { Pool } from "undici";

export interface OpenLoopOptions {
  readonly url: string;
  /** Requests per second, on a fixed schedule. */
  readonly rate: number;
  readonly seconds: number;
  /** Keep-alive connections to spread the requests over (a request waits when all are busy). */
  readonly connections: number;
  readonly keys?: readonly string[];
}

export interface OpenLoopResult {
  sent: number;
  /** 200 answers. */
  ok: number;
  /** Other statuses and failed requests. */
  errors: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  firstError: string | null;
}

/** The q-quantile (0..1) of sorted values (nearest rank). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  const target = new URL(options.url);
  const pool = new Pool(target.origin, { connections: options.connections, pipelining: 1 });
  const path = target.pathname + target.search;
  const keys = options.keys ?? [];
  const total = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  const latencies = new Float64Array(total);
  let done = 0;
  let ok = 0;
  let errors = 0;
  let firstError: string | null = null;
  let finished!: () => void;
  const allDone = new Promise<void>((resolve) => (finished = resolve));

  const fire = (index: number, scheduledAt: number) => {
    const headers: Record<string, string> = keys.length > 0 ? { "x-api-key": keys[index % keys.length]! } : {};
    pool
      .request({ path, method: "GET", headers })
      .then(async (res) => {
        await res.body.dump();
        if (res.statusCode === 200) ok++;
        else {
          errors++;
          firstError ??= `HTTP ${res.statusCode}`;
        }
      })
      .catch((err: unknown) => {
        errors++;
        firstError ??= String((err as Error).message ?? err);
      })
      .finally(() => {
        latencies[index] = performance.now() - scheduledAt;
        if (++done === total) finished();
      });
  };

  const start = performance.now() + 20;
  let next = 0;
  // Sends every request whose scheduled time has come (a late timer sends the backlog at once,
  // each still timed from its own schedule), then sleeps until the next one is due.
  const tick = () => {
    const now = performance.now();
    while (next < total && start + next * interval <= now) {
      fire(next, start + next * interval);
      next++;
    }
    if (next < total) setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
  };
  setTimeout(tick, 20);
  if (total === 0) finished();
  await allDone;
  await pool.close();
  const sorted = latencies.sort();
  return {
    sent: total,
    ok,
    errors,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    firstError,
  };
}

if (import.meta.main) {
  const options = JSON.parse(process.argv[2] ?? "{}") as OpenLoopOptions;
  console.log(JSON.stringify(await runOpenLoop(options)));
}
