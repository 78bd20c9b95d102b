/**
 * API key format: "sig_live_" + 32 base62 characters (~190 random bits). The recognisable
 * prefix lets secret scanners find leaked keys; only the SHA-256 of a key is stored.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const API_KEY_PREFIX = "sig_live_";
const BODY_LENGTH = 32;
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH}}$`);

/** A new random key. Rejection sampling keeps every character uniform over the alphabet. */
export function generateApiKey(): string {
  let body = "";
  while (body.length < BODY_LENGTH) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && body.length < BODY_LENGTH) body += ALPHABET[byte % 62];
    }
  }
  return API_KEY_PREFIX + body;
}

/** True when the string has the shape of one of our keys (checked before any database work). */
export function isWellFormedApiKey(candidate: string): boolean {
  return KEY_PATTERN.test(candidate);
}

/** Hex SHA-256: random keys need no salt or slow hash; the hash is the lookup index. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The part of a key that may be shown again: prefix plus four characters. */
export function displayPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 4);
}

/** Constant-time string comparison of two secrets, via their digests (length-independent). */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash("sha256").update(a, "utf8").digest();
  const db = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(da, db);
}
