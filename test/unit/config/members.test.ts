/**
 * The password hashing cost setting: its default is the production cost the hashing module
 * defines, and it accepts exactly the costs the verifier reads back (so the server never writes
 * a hash it would refuse).
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_SCRYPT, SCRYPT_LOG_N_RANGE } from "../../../src/accounts/sign-in/passwords.ts";
import { ConfigError, loadConfig } from "../../../src/config.ts";

describe("PASSWORD_SCRYPT_LOG_N", () => {
  it("defaults to the production cost, N = 2^17, r = 8, p = 1", () => {
    expect(loadConfig({}).passwordHashCost).toEqual(DEFAULT_SCRYPT);
    expect(loadConfig({ PASSWORD_SCRYPT_LOG_N: " " }).passwordHashCost).toEqual({ logN: 17, r: 8, p: 1 });
  });

  it("sets log2 N from 10 to 20, the range a stored hash may have; r and p stay", () => {
    for (const logN of [SCRYPT_LOG_N_RANGE.min, 14, SCRYPT_LOG_N_RANGE.max])
      expect(loadConfig({ PASSWORD_SCRYPT_LOG_N: String(logN) }).passwordHashCost).toEqual({ logN, r: 8, p: 1 });
  });

  it("refuses a cost outside that range or not a whole number, naming the variable", () => {
    for (const bad of [String(SCRYPT_LOG_N_RANGE.min - 1), String(SCRYPT_LOG_N_RANGE.max + 1), "17.5", "2^17"]) {
      expect(() => loadConfig({ PASSWORD_SCRYPT_LOG_N: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ PASSWORD_SCRYPT_LOG_N: bad })).toThrow(/^PASSWORD_SCRYPT_LOG_N /);
    }
  });
});
