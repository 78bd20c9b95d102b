/**
 * The listeners and their processes: addresses, the internal token, worker processes, HTTP
 * limits and timeouts, the log level, the members' base URL and the proxy in front.
 */
import { availableParallelism } from "node:os";
import { fail, flag, hostName, httpUrl, optionalText, type Parsed, type Rule, wholeNumber } from "./parse.ts";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export const serverEnv = {
  HOST: hostName("127.0.0.1"),
  PORT: wholeNumber(8080, 0, 65535),
  INTERNAL_HOST: hostName("127.0.0.1"),
  INTERNAL_PORT: wholeNumber(8081, 0, 65535),
  INTERNAL_TOKEN: optionalText.refine((v) => v === undefined || v.length >= 16, "must be at least 16 characters"),
  /** Server worker processes on one port; unset: the available cores on Postgres, 1 on PGlite. */
  WORKERS: optionalText.transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 64)
      return fail(ctx, `must be a whole number between 1 and 64, got "${raw}"`);
    return Number(raw);
  }),
  /**
   * Set by the primary process for its workers (server/cluster.ts), not by operators: "lead"
   * runs the once-per-machine duties, "follower" only the public listener.
   */
  SIGNALS_WORKER_ROLE: optionalText.refine(
    (v) => v === undefined || v === "lead" || v === "follower",
    'must be "lead" or "follower"',
  ),
  /** glibc's malloc arenas in each worker process (set in the workers' environment by the primary). */
  MALLOC_ARENA_MAX: wholeNumber(2, 1, 1024),
  LOG_LEVEL: optionalText.transform((v, ctx) => {
    const level = v ?? "info";
    return LOG_LEVELS.includes(level) ? level : fail(ctx, `must be one of ${LOG_LEVELS.join(", ")}`);
  }),
  MAX_HEADER_BYTES: wholeNumber(16 * 1024, 1024, 1024 * 1024),
  HEADERS_TIMEOUT: wholeNumber(10, 1, 600),
  REQUEST_TIMEOUT: wholeNumber(30, 1, 3600),
  IDLE_TIMEOUT: wholeNumber(65, 1, 24 * 3600),
  STREAM_MAX_LIFE: wholeNumber(1800, 1, 7 * 24 * 3600),
  STREAMS_PER_ADDRESS: wholeNumber(200, 1, 100_000),
  GOAWAY_GRACE: wholeNumber(10, 1, 3600),
  PUBLIC_BASE_URL: httpUrl,
  TRUST_PROXY: flag,
};

type ServerEnv = Parsed<typeof serverEnv>;

export const serverRules: Rule<ServerEnv>[] = [
  { holds: (env) => env.PORT === 0 || env.PORT !== env.INTERNAL_PORT, message: "PORT and INTERNAL_PORT must differ" },
];

/** The server's settings; `databaseUrl` decides how many workers run by default. */
export function serverConfig(env: ServerEnv, databaseUrl: string | null) {
  const linkHost =
    env.HOST === "0.0.0.0" || env.HOST === "::" ? "127.0.0.1" : env.HOST.includes(":") ? `[${env.HOST}]` : env.HOST;
  return {
    host: env.HOST,
    port: env.PORT,
    internalHost: env.INTERNAL_HOST,
    internalPort: env.INTERNAL_PORT,
    /** Bearer token of the internal listener; null means "generate one at start". */
    internalToken: env.INTERNAL_TOKEN ?? null,
    /** Server processes sharing the listeners (server/cluster.ts); 1 runs everything in this process. */
    workers: env.WORKERS ?? (databaseUrl === null ? 1 : availableParallelism()),
    /** This process's part when it is one of several workers; null when it is the only server process. */
    workerRole: (env.SIGNALS_WORKER_ROLE ?? null) as "lead" | "follower" | null,
    /**
     * MALLOC_ARENA_MAX the primary gives its workers (glibc's default, 8 per core, lets each
     * allocating thread keep freed memory in an arena of its own; docs/decisions.md).
     */
    workerMallocArenas: env.MALLOC_ARENA_MAX,
    logLevel: env.LOG_LEVEL,
    /** Largest request header block accepted, bytes. */
    maxHeaderBytes: env.MAX_HEADER_BYTES,
    /** A request's header block must arrive within this (ms), else 408 / the connection closes. */
    headersTimeoutMs: env.HEADERS_TIMEOUT * 1000,
    /** A whole request (headers and body) must arrive within this (ms). */
    requestTimeoutMs: env.REQUEST_TIMEOUT * 1000,
    /** A connection (or HTTP/2 session) with no traffic for this long (ms) is closed. */
    idleTimeoutMs: env.IDLE_TIMEOUT * 1000,
    /** An HTTP/2 stream on the public listener is ended after this long (ms), whatever it does. */
    streamMaxLifeMs: env.STREAM_MAX_LIFE * 1000,
    /** HTTP/2 streams one client address may hold open at once on the public listener. */
    streamsPerAddress: env.STREAMS_PER_ADDRESS,
    /** An HTTP/2 session told to go away (GOAWAY) that has not closed after this long (ms) is destroyed. */
    goawayGraceMs: env.GOAWAY_GRACE * 1000,
    /** Where members reach the web pages (links in alerts), without a trailing slash. */
    publicBaseUrl: env.PUBLIC_BASE_URL ?? `http://${linkHost}:${env.PORT}`,
    /**
     * A proxy in front of the public listener sets X-Forwarded-For / X-Forwarded-Proto: use them
     * for the sign-in throttle's client address and for Secure cookies.
     */
    trustProxy: env.TRUST_PROXY ?? false,
  };
}
