/**
 * The bounds of the tests' waits. A test waits for events it caused (a log line, a row, a
 * process's exit), never for a guess of how fast the machine is; these bounds only turn a hang
 * into a failure that names what was awaited (and, for a process, shows its output). They are
 * generous, since a loaded machine can be ten times slower than a quiet one, and stay under
 * vitest's own timeout (test/vitest.config.ts), the last safety net.
 *
 * A wait whose timing IS the subject of a test (a rule such as "within FEED_FAILOVER") has its
 * own bound, derived from what the test configures or from a baseline measured in the same test.
 */

/** A child process's "listening" line, its exit, its exit after SIGTERM. */
export const PROCESS_WAIT_MS = 240_000;

/** Something the test caused (a row, a log line, a status, a delivered message). */
export const EVENT_WAIT_MS = 120_000;

/**
 * A server's exit after SIGTERM: the server cuts what still runs when its GOAWAY_GRACE ends
 * (10 s unless the test sets it), so six graces (a minute at least) is a hang or a shutdown far
 * slower than the server promises, even on a loaded machine: it fails the test instead of
 * passing unnoticed as it would under PROCESS_WAIT_MS.
 */
export function stopWaitMs(env: NodeJS.ProcessEnv): number {
  const graceSeconds = Number(env.GOAWAY_GRACE ?? 10);
  return Math.max(60_000, 6_000 * (Number.isFinite(graceSeconds) ? graceSeconds : 10));
}
