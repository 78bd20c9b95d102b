/**
 * Tells a database that went silent from one that is only slow, for every query of a process.
 *
 * A host cut off from its database by a silent partition fails no connection: packets are
 * dropped, TCP retransmits for minutes, and every query waits (charges, idempotent calls,
 * pages, free endpoints alike) until the caller's request timeout. So the pool's sockets report
 * here when they send and when they hear back. When a connection has waited longer than
 * `silenceMs` for an answer and nothing at all has been heard from the database for as long,
 * the database is asked `SELECT 1` on a fresh connection. If that answers, the waiting
 * statement is only slow (a row lock, a long query) and is left alone. If it does not within
 * `probeWithinMs`, the link is down: every connection is destroyed at once (their queries fail
 * with DatabaseSilent, outcome unknown), and until a probe answers again new queries fail at
 * once with DatabaseUnreachable (never sent). Found by test/reliability/multi-host.test.ts.
 */
import type net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";

/** A query refused without being sent: the database is known to be unreachable. Nothing of it ran. */
export class DatabaseUnreachable extends Error {
  readonly code = "DATABASE_UNREACHABLE";
}

/** A query in flight when the link was found dead: it may or may not have run. */
export class DatabaseSilent extends Error {
  readonly code = "DATABASE_SILENT";
}

export interface LinkWatchOptions {
  /** How long a connection may wait for an answer while the database says nothing at all. */
  readonly silenceMs: number;
  /** How long the probe on a fresh connection may take. */
  readonly probeWithinMs: number;
  /** Whether the database answers `SELECT 1` on a fresh connection within `withinMs`. */
  readonly probe: (withinMs: number) => Promise<boolean>;
  /** Called when the link is found down (after the connections were destroyed) and when it is back. */
  readonly onDown: () => void;
  readonly onUp: () => void;
  readonly logger?: Logger;
}

/** What a socket of the pool reports. */
export interface SocketReports {
  sent(socket: net.Socket): void;
  heard(socket: net.Socket): void;
  closed(socket: net.Socket): void;
}

/** The link's state, for logs, metrics and tests. */
export interface LinkState {
  readonly down: boolean;
  /** Probes of a silent database (not counting the ones while down). */
  readonly probes: number;
  /** Times the link was found down. */
  readonly cuts: number;
}

export interface LinkWatch extends SocketReports {
  /** True from a failed probe until one answers again. */
  readonly down: boolean;
  state(): LinkState;
  close(): void;
}

/** Starts watching; the check runs a few times per silence bound. */
export function watchLink(options: LinkWatchOptions): LinkWatch {
  const { silenceMs, probeWithinMs, probe, logger } = options;
  /** Each open socket of the pool, and since when it has been waiting for an answer (null: not waiting). */
  const waiting = new Map<net.Socket, number | null>();
  let lastHeard = Date.now();
  let down = false;
  let downSince = 0;
  let probing = false;
  let closed = false;
  let probes = 0;
  let cuts = 0;

  const silentSince = (): number | null => {
    let oldest: number | null = null;
    for (const since of waiting.values()) if (since !== null && (oldest === null || since < oldest)) oldest = since;
    return oldest;
  };

  const goDown = () => {
    down = true;
    downSince = Date.now();
    cuts++;
    logger?.warn(
      { pid: process.pid, silenceMs, probeWithinMs, connections: waiting.size },
      "database unreachable: no answer for the silence bound, nor to a probe; refusing queries until it answers",
    );
    const err = new DatabaseSilent(`the database said nothing for ${silenceMs} ms, nor answered a probe`);
    for (const socket of [...waiting.keys()]) socket.destroy(err);
    waiting.clear();
    options.onDown();
    void recover();
  };

  const recover = async () => {
    while (down && !closed) {
      await sleep(Math.min(1_000, silenceMs), undefined, { ref: false });
      if (closed) return;
      if (await probe(probeWithinMs)) {
        down = false;
        lastHeard = Date.now();
        // As loud as the warning it ends (and written at once, as warnings are).
        logger?.warn({ pid: process.pid, downForMs: Date.now() - downSince }, "database reachable again");
        options.onUp();
      }
    }
  };

  const check = () => {
    if (down || probing || closed) return;
    const now = Date.now();
    const since = silentSince();
    if (since === null || now - since < silenceMs || now - lastHeard < silenceMs) return;
    probing = true;
    probes++;
    const startedAt = now;
    void probe(probeWithinMs).then((answered) => {
      probing = false;
      if (closed) return;
      if (answered) lastHeard = Math.max(lastHeard, Date.now());
      // A pool connection heard from meanwhile (a loaded event loop late to read it) also proves the link alive.
      else if (lastHeard < startedAt) goDown();
    });
  };
  const timer = setInterval(check, Math.max(10, Math.min(250, silenceMs / 4)));
  timer.unref();

  return {
    get down() {
      return down;
    },
    sent(socket) {
      if (!waiting.get(socket)) waiting.set(socket, Date.now());
    },
    heard(socket) {
      lastHeard = Date.now();
      waiting.set(socket, null);
    },
    closed(socket) {
      waiting.delete(socket);
    },
    state: () => ({ down, probes, cuts }),
    close() {
      closed = true;
      clearInterval(timer);
    },
  };
}
