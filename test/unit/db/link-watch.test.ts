/**
 * The link watch on its own (src/db/link-watch.ts): sockets that report sending and hearing, a
 * probe the test answers by hand. The real thing, a host cut off by a silent partition, is
 * test/reliability/multi-host.test.ts; a statement waiting on a row lock is in db-faults.test.ts.
 */
import type net from "node:net";
import { describe, expect, it } from "vitest";
import { DatabaseSilent, type LinkWatch, watchLink } from "../../../src/db/link-watch.ts";
import { waitFor } from "../../support/reliability.ts";
import { EVENT_WAIT_MS } from "../../support/waits.ts";

/** A socket stand-in that only records how it was destroyed. */
function fakeSocket(): net.Socket & { destroyedWith: unknown } {
  const socket = {
    destroyedWith: undefined as unknown,
    destroy(err?: unknown) {
      socket.destroyedWith = err ?? null;
      return socket;
    },
  };
  return socket as unknown as net.Socket & { destroyedWith: unknown };
}

/** A probe whose answers the test gives: each call waits for the next `answer`. */
function manualProbe() {
  const waiting: Array<(answered: boolean) => void> = [];
  return {
    calls: 0,
    probe(): Promise<boolean> {
      this.calls++;
      return new Promise((resolve) => waiting.push(resolve));
    },
    pending: () => waiting.length,
    /** Answers the oldest probe and lets the watch act on it. */
    async answer(answered: boolean) {
      waiting.shift()!(answered);
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

function watch(probe: ReturnType<typeof manualProbe>, events: string[]): LinkWatch {
  return watchLink({
    silenceMs: 40,
    probeWithinMs: 1_000,
    probe: () => probe.probe(),
    onDown: () => events.push("down"),
    onUp: () => events.push("up"),
  });
}

describe("the database link watch", () => {
  it("leaves a statement that is only slow alone: the probe answers, nothing is destroyed", async () => {
    const probe = manualProbe();
    const events: string[] = [];
    const link = watch(probe, events);
    try {
      const socket = fakeSocket();
      link.sent(socket);
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "a probe of the silent database");
      await probe.answer(true);
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "another probe after another silence");
      await probe.answer(true);
      link.heard(socket);
      expect(socket.destroyedWith).toBeUndefined();
      expect(link.state()).toMatchObject({ down: false, cuts: 0 });
      expect(events).toEqual([]);
    } finally {
      link.close();
    }
  });

  it("never probes while nothing waits for an answer, however long the database is silent", async () => {
    const probe = manualProbe();
    const link = watch(probe, []);
    try {
      const socket = fakeSocket();
      link.sent(socket);
      link.heard(socket);
      const idleSince = Date.now();
      await waitFor(() => Date.now() - idleSince > 200, EVENT_WAIT_MS, "five silence bounds to pass");
      expect(probe.calls).toBe(0);
    } finally {
      link.close();
    }
  });

  it("takes a failed probe for a dead link: destroys every connection, is down until a probe answers", async () => {
    const probe = manualProbe();
    const events: string[] = [];
    const link = watch(probe, events);
    try {
      const waiting = fakeSocket();
      const idle = fakeSocket();
      link.sent(idle);
      link.heard(idle);
      link.sent(waiting);
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "a probe of the silent database");
      await probe.answer(false);
      expect(link.down).toBe(true);
      expect(events).toEqual(["down"]);
      expect(waiting.destroyedWith).toBeInstanceOf(DatabaseSilent);
      expect(idle.destroyedWith).toBeInstanceOf(DatabaseSilent);
      // While down it keeps probing, and stays down while the probes fail.
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "a probe while down");
      await probe.answer(false);
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "the next probe while down");
      expect(link.down).toBe(true);
      await probe.answer(true);
      await waitFor(() => !link.down, EVENT_WAIT_MS, "the link to be up again");
      expect(events).toEqual(["down", "up"]);
      expect(link.state()).toMatchObject({ down: false, cuts: 1 });
    } finally {
      link.close();
    }
  });

  it("does not take a probe that timed out for a dead link when a connection was heard from meanwhile", async () => {
    const probe = manualProbe();
    const link = watch(probe, []);
    try {
      const socket = fakeSocket();
      link.sent(socket);
      await waitFor(() => probe.pending() === 1, EVENT_WAIT_MS, "a probe of the silent database");
      // A loaded event loop read the answer late: the link was alive all along.
      link.heard(socket);
      await probe.answer(false);
      expect(link.down).toBe(false);
      expect(socket.destroyedWith).toBeUndefined();
    } finally {
      link.close();
    }
  });
});
