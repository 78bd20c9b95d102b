/**
 * The environment the primary forks each worker with (server/cluster.ts): its role, the lead's
 * internal port once known, and glibc's malloc arena limit (MALLOC_ARENA_MAX, 2 unless the
 * operator chose another).
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import { workerEnv } from "../../../src/server/cluster.ts";

const PG = { DATABASE_URL: "postgres://h/db", WORKERS: "2" };

describe("a worker's environment", () => {
  it("limits glibc to 2 malloc arenas when the operator set nothing", () => {
    const config = loadConfig(PG);
    expect(workerEnv(true, null, config)).toEqual({ SIGNALS_WORKER_ROLE: "lead", MALLOC_ARENA_MAX: "2" });
    expect(workerEnv(false, 9001, config)).toEqual({ SIGNALS_WORKER_ROLE: "follower", MALLOC_ARENA_MAX: "2" });
  });

  it("passes the operator's MALLOC_ARENA_MAX on unchanged", () => {
    const config = loadConfig({ ...PG, MALLOC_ARENA_MAX: "8" });
    expect(workerEnv(false, null, config).MALLOC_ARENA_MAX).toBe("8");
  });

  it("gives a restarted lead the internal port it had", () => {
    expect(workerEnv(true, 9001, loadConfig(PG))).toMatchObject({ SIGNALS_WORKER_ROLE: "lead", INTERNAL_PORT: "9001" });
  });

  it("refuses a MALLOC_ARENA_MAX that is not a whole number from 1", () => {
    expect(() => loadConfig({ ...PG, MALLOC_ARENA_MAX: "0" })).toThrow(/MALLOC_ARENA_MAX/);
    expect(() => loadConfig({ ...PG, MALLOC_ARENA_MAX: "two" })).toThrow(/MALLOC_ARENA_MAX/);
  });
});
