import { configDefaults, defineConfig } from "vitest/config";

// One suite, two databases: embedded PGlite by default, real Postgres when DATABASE_URL is set
// (each test file then creates and drops its own database).
//
// Two projects share one pool of workers. Unit tests are pure (no server, no database, no
// module-level state they change and leave behind), so their files run one after another in a
// reused worker instead of a fresh process each (`isolate: false`). Every other file starts
// servers, child processes or databases and keeps its own process.
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    // The only safety net for a wait that never ends: waits are for events (a log line, a row, an exit), and the
    // bounds of waits on child processes (test/support/processes.ts, 240 s) stay under this one.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: "forks",
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], isolate: false },
      },
      {
        extends: true,
        test: {
          name: "servers",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/unit/**"],
          globalSetup: ["test/global-setup.ts"],
        },
      },
    ],
  },
});
