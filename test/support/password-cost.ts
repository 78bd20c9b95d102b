/**
 * The scrypt cost test servers and child processes hash new member passwords at: the lowest the
 * configuration accepts (2^10: about 1 MiB and a few ms a hash, against 128 MiB and 0.35 s at
 * the production cost), as Rails and Django lower theirs in test. A stored hash is verified at
 * the cost written in it, so nothing else changes. The tests whose subject is the hash cost or
 * the hashing queue start their servers with PRODUCTION_PASSWORD_COST_ENV instead.
 */
import { DEFAULT_SCRYPT, SCRYPT_LOG_N_RANGE, type ScryptCost } from "../../src/accounts/sign-in/passwords.ts";

/** The tests' cost, for code called without a server's configuration. */
export const TEST_PASSWORD_COST: ScryptCost = Object.freeze({ ...DEFAULT_SCRYPT, logN: SCRYPT_LOG_N_RANGE.min });

/** What startTestServer and childEnv add to a test's environment (a test's own env overrides it). */
export const TEST_PASSWORD_COST_ENV: Readonly<Record<string, string>> = Object.freeze({
  PASSWORD_SCRYPT_LOG_N: String(TEST_PASSWORD_COST.logN),
});

/** The production default, for the tests that measure or depend on a real hash's time. */
export const PRODUCTION_PASSWORD_COST_ENV: Readonly<Record<string, string>> = Object.freeze({
  PASSWORD_SCRYPT_LOG_N: String(DEFAULT_SCRYPT.logN),
});
