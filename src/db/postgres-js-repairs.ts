/**
 * Repairs of postgres.js 3.4.9 (the latest release), kept apart from the client factory so they
 * can be deleted when upstream fixes them. Each was found by test/reliability/db-faults.test.ts
 * (faults injected through a TCP proxy); that test is how to check a driver upgrade without
 * them.
 *
 *  - faultReportingSocket: a query stranded between a socket's 'error' and 'close' (no upstream
 *    issue found), and a stale batched write that breaks the next connection (porsager/postgres
 *    #1130, #1193);
 *  - the self-replacing pool (openRepairedPool): after such a fault the driver's state is out of
 *    reach, so new queries go to a fresh pool and the old one finishes what it was doing;
 *  - seedArrayTypes / stopFetchingTypes: a fresh connection's first query sends arrays as text
 *    ("malformed array literal", porsager/postgres #789, #1164), and a connection cut while
 *    fetching the types crashes the process with an unhandled rejection (#952 is the per
 *    connection fetch).
 *
 * The one fault these cannot reach (a ROLLBACK written to a connection closed under its
 * transaction, inside the driver's closure) is patched at install: src/db/postgres-js-patch.ts.
 */
import net from "node:net";
import type { Logger } from "pino";
import type postgres from "postgres";
import { DatabaseUnreachable, type LinkState, type SocketReports, watchLink } from "./link-watch.ts";

/** A postgres.js client (a pool of connections). */
export type PostgresClient = ReturnType<typeof postgres>;
/** The `socket` option of postgres.js: how a connection gets its socket. */
export type SocketFactory = (options: { host: string[]; port: number[]; path?: string | false }) => net.Socket;

/**
 * A TCP socket for postgres.js that works around two fault-handling bugs of postgres.js 3.4.9
 * (the latest release), both found by test/reliability/db-faults.test.ts:
 *
 * 1. A query handed to a connection between its socket's 'error' and 'close' events (a reset
 *    socket emits them one event-loop turn apart) is written nowhere and never settles: the
 *    driver rejects a connection's queries on 'error' but leaves the pool's queues only on
 *    'close'. Here 'error' is held back and emitted right before 'close', in the same tick, so
 *    the connection is out of the queues before any promise callback can route a query to it.
 * 2. A connection that closes while a small write is still batched (it is flushed from a
 *    setImmediate) keeps that stale batch and a cancelled-but-set timer forever: its next
 *    connection never sends its startup message (CONNECT_TIMEOUT after connect_timeout, again
 *    and again), or later sends the stale bytes first (porsager/postgres issues #1130, #1193
 *    and the unmerged fixes around them). The driver's state is out of reach, so `onFault` is
 *    called whenever that can have happened (a connected socket that failed or was closed by the
 *    server, or one whose startup message did not follow its connect), and the handle below
 *    replaces the whole pool.
 *
 * Only plain TCP connections get the first fix: with TLS, postgres.js wraps the socket in its own.
 */
export function faultReportingSocket(
  options: { host: string[]; port: number[]; path?: string | false },
  onFault: () => void,
  reports?: SocketReports,
): net.Socket {
  const socket = new net.Socket();
  const emit = socket.emit as (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean;
  let held: unknown = null;
  let closed = false;
  let connected = false;
  let wrote = false;
  let endedByDriver = false;
  socket.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "error" && !closed) {
      held ??= args[0];
      return true;
    }
    if (event === "connect") {
      connected = true;
      // A healthy driver wrote its startup message before the connect completed (it waits in the
      // socket's buffer), at the latest from an immediate queued before this one.
      setImmediate(() => {
        if (!wrote && !closed) onFault();
      });
    }
    if (event === "data") reports?.heard(socket);
    if (event === "close") {
      reports?.closed(socket);
      closed = true;
      if (connected && (held !== null || !endedByDriver)) onFault();
      if (held !== null) emit.call(this, "error", held);
      held = null;
    }
    return emit.call(this, event, ...args);
  } as typeof socket.emit;
  if (options.path) socket.connect(options.path);
  else socket.connect(options.port[0]!, options.host[0]!);
  socket.setNoDelay(true);
  // After connect(): it resets an instance's `write` to the prototype's.
  const write = socket.write;
  const end = socket.end;
  socket.write = function (this: net.Socket, ...args: unknown[]) {
    wrote = true;
    reports?.sent(socket);
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof socket.write;
  socket.end = function (this: net.Socket, ...args: unknown[]) {
    endedByDriver = true;
    return (end as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof socket.end;
  return socket;
}

/**
 * Gives a new pool the array types the old one learnt. postgres.js fetches them on each new
 * connection but builds that connection's first query before storing them, so the first
 * queries of a fresh pool sent array parameters as text ("malformed array literal").
 */
export function seedArrayTypes(from: PostgresClient, to: PostgresClient): void {
  type TypeOptions = {
    shared: { typeArrayMap: Record<string, number> };
    parsers: Record<string, unknown>;
    serializers: Record<string, unknown>;
  };
  const source = (from as unknown as { options: TypeOptions }).options;
  const target = (to as unknown as { options: TypeOptions }).options;
  for (const [oid, typarray] of Object.entries(source.shared.typeArrayMap)) {
    target.shared.typeArrayMap[oid] = typarray;
    target.parsers[typarray] ??= source.parsers[typarray];
    target.serializers[typarray] ??= source.serializers[typarray];
  }
}

/** Stops the pool's connections from fetching array types when they connect (options are read per connection). */
export function stopFetchingTypes(client: PostgresClient): void {
  (client as unknown as { options: { fetch_types: boolean } }).options.fetch_types = false;
}

/** A pool is replaced at most this often; a fault within that time waits for the next turn. */
const REPLACE_POOL_EVERY_MS = 250;
/** How long a replaced pool may finish what it was doing before its connections are destroyed. */
const RETIRED_POOL_GRACE_S = 5;

/** A postgres.js pool that replaces itself after a fault (see the module comment). */
export interface RepairedPool {
  /** The pool new queries go to (it changes after a fault, and refuses every query while the link is down). */
  current(): PostgresClient;
  /** LISTEN on the current pool and on every pool that replaces it. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<void>;
  /** Whether the database is known to be unreachable, and how often it was probed and found down. */
  link(): LinkState;
  /** Ends the current pool and waits (briefly) for replaced ones. */
  close(): Promise<void>;
}

/** Opens a postgres.js client over the given socket factory; `refusing`: one whose sockets all fail at once. */
export type OpenClient = (socket: SocketFactory, refusing: boolean) => PostgresClient;

/**
 * A client of its own for the probe, destroyed after it whatever the outcome (a cut network never fails its connect).
 */
async function answersOnFreshConnection(open: OpenClient, withinMs: number): Promise<boolean> {
  const probe = open((options) => faultReportingSocket(options, () => {}), false);
  stopFetchingTypes(probe);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, withinMs, false)));
  try {
    return await Promise.race([
      probe`SELECT 1`.then(
        () => true,
        () => false,
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    void probe.end({ timeout: 0 }).catch(() => {});
  }
}

/**
 * The socket of a connection to a database known to be unreachable: it fails on the next turn
 * of the event loop, so the query waiting for it is refused at once (DatabaseUnreachable)
 * instead of waiting for a connect that a silent network never completes or refuses.
 */
function refusedSocket(): net.Socket {
  const socket = new net.Socket();
  socket.write = (() => true) as typeof socket.write;
  setImmediate(() => socket.destroy(new DatabaseUnreachable("the database is unreachable; the query was not sent")));
  return socket;
}

/** How long a connection may wait for an answer while the database says nothing, and the probe's bound. */
export interface SilenceBounds {
  readonly silenceMs: number;
  readonly probeWithinMs: number;
  readonly logger?: Logger;
}

/**
 * Opens a pool through `open` (which must pass the given socket factory as postgres.js's
 * `socket` option) and connects it once, so it learns the array types before any query that
 * sends arrays; a database that cannot be reached fails the open (callers retry). The pool's
 * sockets report to a link watch (link-watch.ts): while the link is down, queries go to a
 * client whose connections all fail at once.
 */
export async function openRepairedPool(open: OpenClient, bounds: SilenceBounds): Promise<RepairedPool> {
  const listeners: Array<[string, (payload: string) => void]> = [];
  let closing = false;
  /** Replaced pools still finishing their queries (awaited by close()). */
  const retiring = new Set<Promise<void>>();
  let replacedAt = 0;
  let replaceTimer: NodeJS.Timeout | null = null;
  // Replaced on the way down (the old connections are destroyed) and on the way up, so that the
  // listeners subscribe again over a link that works.
  const watch = watchLink({
    ...bounds,
    probe: (withinMs) => answersOnFreshConnection(open, withinMs),
    onDown: () => retireNow(),
    onUp: () => onFault(current),
  });
  const openPool = (): PostgresClient => {
    const client: PostgresClient = open(
      (options) => (watch.down ? refusedSocket() : faultReportingSocket(options, () => onFault(client), watch)),
      false,
    );
    return client;
  };
  let refusing: PostgresClient | null = null;
  const refusingClient = (): PostgresClient => {
    if (refusing === null) {
      refusing = open(refusedSocket, true);
      stopFetchingTypes(refusing);
    }
    return refusing;
  };
  let current = openPool();
  // New queries go to a fresh pool; the old one finishes (or, after the grace, fails) its own.
  const replace = (graceS = RETIRED_POOL_GRACE_S): Promise<void> => {
    replaceTimer = null;
    if (closing) return Promise.resolve();
    replacedAt = Date.now();
    const old = current;
    current = openPool();
    seedArrayTypes(old, current);
    stopFetchingTypes(current);
    for (const [channel, onPayload] of listeners) current.listen(channel, onPayload).catch(() => {});
    const ended = old.end({ timeout: graceS }).catch(() => {});
    retiring.add(ended);
    void ended.then(() => retiring.delete(ended));
    return ended;
  };
  /**
   * The link is down: the pool is replaced and the old one ended at once, before the link watch
   * destroys its sockets. Ended, postgres.js refuses further queries on those connections; a
   * query handed to a connection whose socket was already gone (a transaction's ROLLBACK after
   * its statement failed) was written to a null socket and crashed the process (found by
   * test/reliability/multi-host.test.ts). Waits at most 250 ms: the end's own work is local.
   */
  const retireNow = (): Promise<unknown> => {
    if (replaceTimer !== null) clearTimeout(replaceTimer);
    const ended = replace(0);
    return Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 250).unref())]);
  };
  const onFault = (pool: PostgresClient) => {
    if (pool !== current || closing || replaceTimer !== null) return;
    replaceTimer = setTimeout(() => void replace(), Math.max(0, replacedAt + REPLACE_POOL_EVERY_MS - Date.now()));
  };
  try {
    await current`SELECT 1`;
    // Every later connection would fetch the types again, first thing: a connection cut during
    // that fetch rejected a promise nobody handles inside postgres.js, and the process died of
    // an unhandled rejection (RELIABILITY_FULL run of test/reliability/db-faults.test.ts). The
    // types are known now; replacement pools are seeded with them and do not fetch either.
    stopFetchingTypes(current);
  } catch (err) {
    watch.close();
    await current.end({ timeout: 0 }).catch(() => {});
    throw err;
  }
  return {
    current: () => (watch.down ? refusingClient() : current),
    link: () => watch.state(),
    async listen(channel, onPayload) {
      listeners.push([channel, onPayload]);
      await current.listen(channel, onPayload);
    },
    async close() {
      closing = true;
      watch.close();
      if (replaceTimer !== null) clearTimeout(replaceTimer);
      // By now the callers are answered or gone (the listeners closed first): a query still
      // running belongs to none of them, so shutdown waits for it 1 s, not 5 (found by the
      // SIGTERM test in test/reliability/process-faults.test.ts: 10 s grace + 5 s = 15 s).
      await Promise.all([
        current.end({ timeout: 1 }),
        refusing?.end({ timeout: 0 }),
        Promise.race([Promise.all(retiring), new Promise((r) => setTimeout(r, 1_000).unref())]),
      ]);
    },
  };
}
