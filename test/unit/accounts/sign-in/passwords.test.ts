/**
 * Password hashing: the self-describing scrypt string, verification in both directions,
 * tampered or unreadable hashes, the length rules, and the cost parameters read back from
 * the string (so a later cost change keeps old hashes working).
 */
import { describe, expect, it } from "vitest";
import {
  checkPasswordPolicy,
  DEFAULT_SCRYPT,
  hashPassword,
  PasswordPolicyError,
  verifyAgainstDummy,
  verifyPassword,
} from "../../../../src/accounts/sign-in/passwords.ts";

// A cheap cost for the tests that do not check the default; verification reads it from the string.
const CHEAP = { logN: 10, r: 8, p: 1 };

describe("hashPassword / verifyPassword", () => {
  it("writes scrypt$N$r$p$salt$hash with the default cost (N = 2^17, r = 8, p = 1) and verifies it", async () => {
    const stored = await hashPassword("correct horse battery");
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(DEFAULT_SCRYPT).toEqual({ logN: 17, r: 8, p: 1 });
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
    expect(await verifyPassword("correct horse batterY", stored)).toBe(false);
  });

  it("salts every hash: the same password twice gives two different strings, both valid", async () => {
    const a = await hashPassword("the same password", CHEAP);
    const b = await hashPassword("the same password", CHEAP);
    expect(a).not.toBe(b);
    expect(await verifyPassword("the same password", a)).toBe(true);
    expect(await verifyPassword("the same password", b)).toBe(true);
  });

  it("uses the cost written in the string", async () => {
    const stored = await hashPassword("another password", { logN: 11, r: 4, p: 2 });
    expect(stored.startsWith("scrypt$2048$4$2$")).toBe(true);
    expect(await verifyPassword("another password", stored)).toBe(true);
  });

  it("treats composed and decomposed Unicode forms of a password as the same password", async () => {
    const stored = await hashPassword("caf\u00e9 au lait!!", CHEAP);
    expect(await verifyPassword("cafe\u0301 au lait!!", stored)).toBe(true);
  });

  it("refuses tampered, foreign and out-of-bounds hash strings without throwing", async () => {
    const stored = await hashPassword("a good password", CHEAP);
    const parts = stored.split("$");
    const flipped = [...parts];
    flipped[5] = (parts[5]![0] === "A" ? "B" : "A") + parts[5]!.slice(1);
    const candidates = [
      flipped.join("$"),
      stored.replace(/^scrypt/, "bcrypt"),
      ["scrypt", "3000", "8", "1", parts[4], parts[5]].join("$"), // N not a power of two
      ["scrypt", String(2 ** 25), "8", "1", parts[4], parts[5]].join("$"), // too costly to run
      ["scrypt", "1024", "8", "1", "", parts[5]].join("$"),
      "",
      "plain text",
    ];
    for (const candidate of candidates)
      expect(await verifyPassword("a good password", candidate), candidate).toBe(false);
  });

  it("answers false at once for an absurdly long password", async () => {
    const stored = await hashPassword("a good password", CHEAP);
    expect(await verifyPassword("x".repeat(100_000), stored)).toBe(false);
  });

  it("the dummy verification (unknown email) always answers false", async () => {
    expect(await verifyAgainstDummy("anything at all", DEFAULT_SCRYPT)).toBe(false);
  });
});

describe("checkPasswordPolicy", () => {
  it("accepts 10 to 1024 characters, counted as characters not bytes", () => {
    expect(() => checkPasswordPolicy("0123456789")).not.toThrow();
    expect(() => checkPasswordPolicy("\u{1F511}".repeat(10))).not.toThrow();
    expect(() => checkPasswordPolicy("x".repeat(1024))).not.toThrow();
  });

  it("refuses shorter and longer ones with a readable reason", () => {
    expect(() => checkPasswordPolicy("123456789")).toThrow(PasswordPolicyError);
    expect(() => checkPasswordPolicy("123456789")).toThrow("at least 10 characters");
    expect(() => checkPasswordPolicy("x".repeat(1025))).toThrow("at most 1024 characters");
  });
});
