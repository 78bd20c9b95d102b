/**
 * DB_IDLE_IN_TRANSACTION_MS: the idle-in-transaction timeout every database connection sends
 * at startup. 0 sends nothing; below a second it would end a loaded process's own transactions.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../src/config.ts";
import { DEFAULT_IDLE_IN_TRANSACTION_MS } from "../../../src/db/client.ts";

describe("DB_IDLE_IN_TRANSACTION_MS", () => {
  it("defaults to the database layer's 15 s", () => {
    expect(loadConfig({}).dbIdleInTransactionMs).toBe(DEFAULT_IDLE_IN_TRANSACTION_MS);
    expect(DEFAULT_IDLE_IN_TRANSACTION_MS).toBe(15_000);
  });

  it("takes 0 (not sent) or 1000 ms to an hour", () => {
    for (const ms of [0, 1_000, 60_000, 3_600_000])
      expect(loadConfig({ DB_IDLE_IN_TRANSACTION_MS: String(ms) }).dbIdleInTransactionMs).toBe(ms);
  });

  it("refuses anything else, naming the variable", () => {
    for (const bad of ["1", "999", "3600001", "-1", "1.5", "15s"]) {
      expect(() => loadConfig({ DB_IDLE_IN_TRANSACTION_MS: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ DB_IDLE_IN_TRANSACTION_MS: bad })).toThrow(/^DB_IDLE_IN_TRANSACTION_MS /);
    }
  });
});
