/**
 * The published key format: prefix, length, alphabet and CRC-32 checksum (a vector computed
 * independently with Python's zlib), the legacy format still accepted, and typos refused offline.
 */
import { describe, expect, it } from "vitest";
import {
  API_KEY_PATTERN,
  apiKeyChecksum,
  generateApiKey,
  hashApiKey,
  hasValidChecksum,
  isLegacyApiKey,
  isWellFormedApiKey,
} from "../../../src/accounts/api-key.ts";
import { wellFormedKeyHash } from "../../../src/accounts/api-key-guard.ts";

/** python3: zlib.crc32(b"sig_live_0123456789abcdefghijABCDEFGHIJ") = 0xf3249af5 → base62 "4S4AVh". */
const VECTOR = "sig_live_0123456789abcdefghijABCDEFGHIJ4S4AVh";
/** The scanner pattern published in README.md (current and legacy keys). */
const PUBLISHED = /\bsig_live_[0-9A-Za-z]{30}[0-9A-Za-z]{6}\b/;

describe("API key checksum", () => {
  it("matches an independent CRC-32 / base62 computation", () => {
    expect(apiKeyChecksum("sig_live_0123456789abcdefghijABCDEFGHIJ")).toBe("4S4AVh");
    expect(hasValidChecksum(VECTOR)).toBe(true);
    expect(apiKeyChecksum("sig_live_")).toBe("4aRIu7");
  });

  it("stores the hex SHA-256 of the key (a vector from sha256sum)", () => {
    expect(hashApiKey(VECTOR)).toBe("015a147fd1943a28448907d1c8a9a86820a24bc65ac6bffb0a68a76381f5b99e");
  });

  it("new keys: 45 characters, the published pattern, a valid checksum", () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toHaveLength(45);
      expect(key).toMatch(API_KEY_PATTERN);
      expect(key).toMatch(PUBLISHED);
      expect(hasValidChecksum(key)).toBe(true);
    }
  });

  it("any single-character typo, swap or truncation is refused without a database", () => {
    const key = generateApiKey();
    const body = key.slice(9);
    for (let i = 0; i < body.length; i++) {
      const ch = body[i]!;
      const other = ch === "a" ? "b" : "a";
      expect(isWellFormedApiKey(key.slice(0, 9 + i) + other + key.slice(10 + i)), `typo at ${i}`).toBe(false);
      if (i + 1 < body.length && body[i] !== body[i + 1]) {
        const swapped = key.slice(0, 9 + i) + body[i + 1] + body[i] + key.slice(11 + i);
        expect(isWellFormedApiKey(swapped), `swap at ${i}`).toBe(false);
      }
    }
    expect(isWellFormedApiKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(key.replace("sig_live_", "sig_test_"))).toBe(false);
  });

  it("random strings of the right shape almost never pass (CRC-32: 1 in 2^32)", () => {
    let passed = 0;
    for (let i = 0; i < 5_000; i++) if (isWellFormedApiKey(`${generateApiKey().slice(0, -6)}000000`)) passed++;
    expect(passed).toBeLessThanOrEqual(1);
  });

  it("keys issued before the checksum (sig_live_ + 32 base62) are still well-formed: the database decides", () => {
    const legacy = `sig_live_${"Ab3".repeat(10)}xy`;
    expect(legacy).toHaveLength(41);
    expect(isLegacyApiKey(legacy)).toBe(true);
    expect(isWellFormedApiKey(legacy)).toBe(true);
    expect(hasValidChecksum(legacy)).toBe(false);
  });
});

describe("the guard's key hash", () => {
  it("gives every well-formed key its SHA-256 and every other string null, call after call", () => {
    const legacy = `sig_live_${"a".repeat(32)}`;
    const typo = `${VECTOR.slice(0, -1)}${VECTOR.endsWith("h") ? "g" : "h"}`;
    for (let round = 0; round < 3; round++) {
      expect(wellFormedKeyHash(VECTOR)).toBe(hashApiKey(VECTOR));
      expect(wellFormedKeyHash(legacy)).toBe(hashApiKey(legacy));
      expect(wellFormedKeyHash(typo)).toBeNull();
      expect(wellFormedKeyHash("")).toBeNull();
      expect(wellFormedKeyHash(` ${VECTOR}`)).toBeNull();
    }
  });
});
