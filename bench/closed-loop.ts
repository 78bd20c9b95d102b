/**
 * A closed-loop load generator for benchmarks that need the paid path's throughput over time:
 * `connections` keep-alive connections each send the next request as soon as the previous
 * one is answered, until the process is stopped. Runs in its own process (so it never competes
 * with the benchmark's own event loop):
 *
 *   node bench/closed-loop.ts '{"url":"http://127.0.0.1:8080/path","connections":4,"keys":["sig_live_…"]}'
 *
 * prints one JSON line every 100 ms: `{"at": <epoch ms>, "ok": <200s since the last line>,
 * "errors": <others>, "firstError": <text or null>}`. The keys are sent in turn as `x-api-key`.
 */
import { Pool } from "undici";

interface ClosedLoopOptions {
  readonly url: string;
  readonly connections: number;
  readonly keys?: readonly string[];
}

/** One line of the generator's output. */
export interface ClosedLoopBucket {
  at: number;
  ok: number;
  errors: number;
  firstError: string | null;
}

/** Calls per second answered 200 within [from, to) (epoch ms), and the errors there, from the generator's lines. */
export function rateBetween(
  buckets: readonly ClosedLoopBucket[],
  from: number,
  to: number,
): { perSecond: number; ok: number; errors: number } {
  let ok = 0;
  let errors = 0;
  for (const b of buckets) {
    if (b.at > from && b.at <= to) {
      ok += b.ok;
      errors += b.errors;
    }
  }
  return { perSecond: ok / ((to - from) / 1000), ok, errors };
}

async function run(options: ClosedLoopOptions): Promise<void> {
  const target = new URL(options.url);
  const pool = new Pool(target.origin, { connections: options.connections, pipelining: 1 });
  const path = target.pathname + target.search;
  const keys = options.keys ?? [];
  let ok = 0;
  let errors = 0;
  let firstError: string | null = null;
  let sent = 0;
  setInterval(() => {
    process.stdout.write(`${JSON.stringify({ at: Date.now(), ok, errors, firstError })}\n`);
    ok = 0;
    errors = 0;
  }, 100);
  const lane = async () => {
    for (;;) {
      const headers: Record<string, string> = keys.length > 0 ? { "x-api-key": keys[sent++ % keys.length]! } : {};
      try {
        const res = await pool.request({ path, method: "GET", headers });
        await res.body.dump();
        if (res.statusCode === 200) ok++;
        else {
          errors++;
          firstError ??= `HTTP ${res.statusCode}`;
        }
      } catch (err) {
        errors++;
        firstError ??= String((err as Error).message ?? err);
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, lane));
}

if (import.meta.main) await run(JSON.parse(process.argv[2] ?? "{}") as ClosedLoopOptions);
