/**
 * A stop that arrives while the server is still starting (here: the database refuses every
 * connection, so start-up waits for it indefinitely) ends the process as the signal would,
 * but only after the lines logged so far are on stdout: they are buffered (logger.ts), and the
 * signal's default action used to drop them.
 */
import { describe, expect, it } from "vitest";
import { childEnv } from "../support/processes.ts";
import { spawnServer, waitFor } from "../support/reliability.ts";

const UNREACHABLE_DATABASE = "postgres://postgres@127.0.0.1:1/postgres";

describe("a stop while starting", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal}: the lines logged so far reach stdout, and the process ends by the signal`, async () => {
      const p = spawnServer(
        childEnv({
          DATABASE_URL: UNREACHABLE_DATABASE,
          WORKERS: "1",
          PORT: "0",
          INTERNAL_PORT: "0",
          LOG_LEVEL: "info",
        }),
      );
      try {
        await waitFor(() => p.logs.some((l) => l.msg === "database not reachable; retrying"), 30_000, "a retry line");
        // "close" comes after the last of stdout was read ("exit" may come before it).
        const closed = new Promise((resolve) => p.child.once("close", resolve));
        p.child.kill(signal);
        expect(await p.exited).toBe(signal);
        await closed;
        // Logged in the signal's handler, at info level: buffered, so written only by the flush before the end.
        expect(p.logs.filter((l) => l.msg === "stopped while starting")).toEqual([expect.objectContaining({ signal })]);
        expect(p.stderr()).toBe("");
      } finally {
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
      }
    });
  }
});
