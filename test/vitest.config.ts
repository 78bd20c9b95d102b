import { defineConfig } from "vitest/config";

// One suite, two databases: embedded PGlite by default, real Postgres when DATABASE_URL is set
// (each test file then creates and drops its own database).
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // The only safety net for a wait that never ends: waits are for events (a log line, a row, an exit), and the
    // bounds of waits on child processes (test/support/processes.ts, 240 s) stay under this one.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
