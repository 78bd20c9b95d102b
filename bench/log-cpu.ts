/**
 * CPU per access log line at a steady pace: the server's logger (src/logger.ts options) writing
 * one request line a millisecond for a few seconds to /dev/null, the process's CPU (every
 * thread: sonic-boom's asynchronous writes run in libuv's thread pool) per line, for each stdout
 * setting named. A tight loop would not show the difference: lines written while a write is out
 * are joined anyway, so one write per line is only what a paced server sees.
 *
 *   node bench/log-cpu.ts [rounds=2]
 *
 * Prints, per round: the pacing timer alone (no log line), one write per line (minLength 0,
 * pino's default destination) and 4 KB blocks flushed at least every 100 ms (npm start's).
 */
import { pino } from "pino";
import { createLogger } from "../src/logger.ts";

const SECONDS = 3;
const LINE = {
  reqId: "97c6b6de-4b9e-402a-84fe-fbd30eaaabcd",
  listener: "public",
  method: "GET",
  path: "/api/v1/signals",
  status: 200,
  outcome: "ok",
  ms: 1.23,
};

/** CPU microseconds per paced tick, logging one line per tick through `destination` (or none). */
async function perLine(destination: ReturnType<typeof pino.destination> | null): Promise<number> {
  const logger = destination ? createLogger("info", destination) : null;
  const ticks = SECONDS * 1000;
  let n = 0;
  const before = process.cpuUsage();
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      logger?.info(LINE, "request");
      if (++n >= ticks) {
        clearInterval(timer);
        done();
      }
    }, 1);
  });
  const used = process.cpuUsage(before);
  destination?.flushSync();
  return (used.user + used.system) / ticks;
}

const rounds = Number(process.argv[2] ?? 2);
console.log("| round | pacing alone | one write per line | 4 KB blocks, 100 ms flush |");
console.log("|---|---|---|---|");
for (let round = 1; round <= rounds; round++) {
  const idle = await perLine(null);
  const each = await perLine(pino.destination({ dest: "/dev/null", sync: false, minLength: 0 }));
  const blocks = await perLine(
    pino.destination({ dest: "/dev/null", sync: false, minLength: 4096, periodicFlush: 100 }),
  );
  console.log(`| ${round} | ${idle.toFixed(1)} µs | ${each.toFixed(1)} µs | ${blocks.toFixed(1)} µs |`);
}
