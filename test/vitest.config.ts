import { defineConfig } from "vitest/config";

// One suite, two databases: embedded PGlite by default, real Postgres when DATABASE_URL is set
// (each test file then creates and drops its own database).
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
