/**
 * The web pages' password hashing queue (issue 23, item 2) with hand-released work: one place
 * per client address, a bounded number waiting (refused past it), and a waiting request whose
 * client has gone leaves without its work ever running. Outcomes are counted.
 */
import { describe, expect, it } from "vitest";
import { HashGate, type HashOutcome, HashRefused } from "../../../../src/accounts/sign-in/hash-gate.ts";

/** Work that ends when the test says so, and records that it started. */
function heldWork(started: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const run = async () => {
    started.push(name);
    await done;
    return name;
  };
  return { run, release };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (err: unknown) => (err instanceof HashRefused ? err.reason : err),
  );

describe("HashGate", () => {
  it(
    "holds one place per address, runs `concurrency` at " + "once, lets `maxWaiting` wait and refuses the next",
    async () => {
      const outcomes: HashOutcome[] = [];
      const gate = new HashGate({ concurrency: 1, maxWaiting: 1, onOutcome: (o) => outcomes.push(o) });
      const started: string[] = [];
      const a = gate.enter("192.0.2.1", new AbortController().signal);
      expect(() => gate.enter("192.0.2.1", new AbortController().signal)).toThrow(HashRefused);
      const b = gate.enter("192.0.2.2", new AbortController().signal);
      const c = gate.enter("192.0.2.3", new AbortController().signal);
      const workA = heldWork(started, "a");
      const workB = heldWork(started, "b");
      const runningA = a.hash(workA.run);
      const waitingB = b.hash(workB.run);
      expect(await refusal(c.hash(async () => "c"))).toBe("full");
      expect(gate.load).toEqual({ running: 1, waiting: 1 });
      expect(started).toEqual(["a"]);
      workA.release();
      expect(await runningA).toBe("a");
      a.leave();
      // The address may enter again once it left.
      gate.enter("192.0.2.1", new AbortController().signal).leave();
      workB.release();
      expect(await waitingB).toBe("b");
      expect(started).toEqual(["a", "b"]);
      expect(gate.load).toEqual({ running: 0, waiting: 0 });
      expect(outcomes.sort()).toEqual(["address_busy", "full", "hashed", "hashed"]);
    },
  );

  it("drops a waiting request whose client has gone: its work never runs and its place is free", async () => {
    const gate = new HashGate({ concurrency: 1, maxWaiting: 8 });
    const started: string[] = [];
    const first = heldWork(started, "first");
    const running = gate.enter("198.51.100.1", new AbortController().signal).hash(first.run);
    const client = new AbortController();
    const gone = gate.enter("198.51.100.2", client.signal).hash(async () => started.push("gone"));
    client.abort();
    expect(await refusal(gone)).toBe("client_gone");
    expect(gate.load.waiting).toBe(0);
    first.release();
    await running;
    expect(started).toEqual(["first"]);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });
});
