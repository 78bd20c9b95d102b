import { configDefaults, defineConfig } from "vitest/config";
import { SlowestFirst } from "./support/slowest-first.ts";

// One suite, two databases: embedded PGlite by default, real Postgres when DATABASE_URL is set
// (each test file then creates and drops its own database).
//
// Three projects share one pool of workers. In every project the files run one after another in
// reused workers (`isolate: false`) instead of a fresh process each, which spared 0.4 s of CPU per
// unit file, 1.8 s per integration file and 2.6 s per page file (bench/README.md): the code under
// test keeps no module-level state a file changes and leaves behind (only caches), each file starts
// and stops its own servers, databases, browsers and child processes on ports the OS picks, and no
// test mocks a module or replaces a global it does not restore. Vitest starts the projects' files in
// the order of the projects' names, each project's slowest first (test/support/slowest-first.ts,
// also in a fresh clone): "pages" (the browser files), "servers", then "unit" (the shortest, which
// fill the last minutes of every worker).
//
// Three workers on two cores: a file spends much of its time waiting (for a child process to start or
// exit, a lease or a timer on the real clock, a browser, a socket), so two workers kept only 1.3 cores
// busy on average; a third overlaps those waits. The whole suite, quiet, on the 2-core machine: 363 s with
// two, 285 s with three (bench/README.md, "Test suite wall time").
const web = ["test/web/**", "test/payments/**"];

export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    // The only safety net for a wait that never ends: waits are for events (a log line, a row, an exit), and the
    // bounds of those waits (test/support/waits.ts) stay under this one.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: "forks",
    maxWorkers: 3,
    isolate: false,
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        extends: true,
        // Pure code, no child processes: a unit test that takes a minute has hung.
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: "servers",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/unit/**", ...web],
          globalSetup: ["test/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "pages",
          include: web.map((dir) => `${dir}/*.test.ts`),
          globalSetup: ["test/global-setup.ts"],
        },
      },
    ],
  },
});
