/**
 * The one loop of the feeder's periodic sources: each source polls at once, then after the wait
 * it asks for (the tick without one); a poll that throws is logged and the loop goes on; stop
 * ends every loop, aborting a wait or a poll in flight. Waits are on events the test controls.
 */
import pino from "pino";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { runSources } from "../../../../src/feeder/sources/run.ts";
import type { PeriodicSource } from "../../../../src/feeder/sources/source.ts";
import { SourceStatusBoard } from "../../../../src/feeder/sources/source-status.ts";

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const board = () => new SourceStatusBoard(new Registry(), () => 1_000);
const HOUR = 3_600_000;

describe("runSources", () => {
  it("polls again after the wait a source asks for, and not before the tick when it asks none", async () => {
    const thirdPoll = signal();
    let fast = 0;
    let slow = 0;
    const fastSource: PeriodicSource = {
      name: "fast",
      poll: async () => {
        if (++fast === 3) thirdPoll.resolve();
      },
      waitMs: () => 0,
    };
    const slowSource: PeriodicSource = { name: "slow", poll: async () => void slow++ };
    const running = runSources([fastSource, slowSource], board(), { tickMs: HOUR, logger: pino({ level: "silent" }) });
    await thirdPoll.promise;
    await running.stop();
    expect(fast).toBeGreaterThanOrEqual(3);
    expect(slow).toBe(1);
  });

  it("logs a poll that throws and polls again", async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: "error" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const secondPoll = signal();
    let polls = 0;
    const source: PeriodicSource = {
      name: "flaky",
      poll: async () => {
        if (++polls === 2) secondPoll.resolve();
        if (polls === 1) throw new Error("boom");
      },
      waitMs: () => 0,
    };
    const running = runSources([source], board(), { tickMs: HOUR, logger });
    await secondPoll.promise;
    await running.stop();
    expect(lines[0]).toMatchObject({ source: "flaky", err: "boom", msg: "periodic source poll threw" });
  });

  it("stop aborts the poll in flight and the waits, then resolves", async () => {
    const inFlight = signal();
    let aborted = false;
    const source: PeriodicSource = {
      name: "slow",
      poll: (abort) =>
        new Promise<void>((resolve) => {
          inFlight.resolve();
          const onAbort = () => {
            aborted = true;
            resolve();
          };
          abort.addEventListener("abort", onAbort, { once: true });
        }),
    };
    const running = runSources([source], board(), { tickMs: HOUR, logger: pino({ level: "silent" }) });
    await inFlight.promise;
    await running.stop();
    expect(aborted).toBe(true);
  });

  it("answers the statuses of the board the sources report to, in the order they were added", async () => {
    const statuses = board();
    const news = statuses.reporter("news");
    statuses.reporter("macro").failure("FRED: 500");
    news.success();
    const running = runSources([], statuses, { tickMs: HOUR, logger: pino({ level: "silent" }) });
    expect(running.statuses()).toEqual([
      { name: "news", lastSuccessMs: 1_000, lastError: null, lastErrorMs: null },
      { name: "macro", lastSuccessMs: null, lastError: "FRED: 500", lastErrorMs: 1_000 },
    ]);
    await running.stop();
  });
});
