/**
 * API key format (published in README.md "Keys", for secret scanners):
 *
 *   sig_live_ + 30 random base62 characters + 6-character base62 checksum   (45 characters)
 *
 * The checksum is the CRC-32 (IEEE, as zlib) of everything before it (the prefix and the 30
 * random characters), as an unsigned 32-bit number written in base62 (alphabet 0-9A-Za-z, most
 * significant digit first), left-padded with "0" to 6 characters. 30 base62 characters carry
 * 30·log2(62) ≈ 178.6 random bits (≥ 160). A scanner or this server can tell a real key from a
 * typo or a random string without a database: a key of the new shape with a wrong checksum is
 * refused before any lookup (which also keeps random-key floods off the database).
 *
 * Keys issued before the checksum (`sig_live_` + 32 base62 characters, 41 characters) are
 * recognised by their length and keep working until regenerated; they carry no checksum, so
 * only the database can tell whether one is valid. Only the SHA-256 of a key is stored.
 */
import { createHash, hash, randomBytes, timingSafeEqual } from "node:crypto";
import { crc32 } from "node:zlib";

export const API_KEY_PREFIX = "sig_live_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Random characters of a key issued now. */
export const API_KEY_RANDOM_LENGTH = 30;
/** Base62 digits of the CRC-32 checksum (62^6 > 2^32). */
export const API_KEY_CHECKSUM_LENGTH = 6;
/** Body length of keys issued before the checksum (no checksum, 32 random characters). */
const LEGACY_BODY_LENGTH = 32;
/** Current keys, as a secret-scanning pattern would match them. */
export const API_KEY_PATTERN = new RegExp(
  `^${API_KEY_PREFIX}[0-9A-Za-z]{${API_KEY_RANDOM_LENGTH + API_KEY_CHECKSUM_LENGTH}}$`,
);
const LEGACY_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${LEGACY_BODY_LENGTH}}$`);

/** `length` characters drawn uniformly from the alphabet (rejection sampling: no modulo bias). */
function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length + 16)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/** The 6-character base62 CRC-32 of `text`. */
export function apiKeyChecksum(text: string): string {
  // crc32 encodes a string as UTF-8 itself.
  let value = crc32(text) >>> 0;
  let digits = "";
  for (let i = 0; i < API_KEY_CHECKSUM_LENGTH; i++) {
    digits = ALPHABET[value % 62] + digits;
    value = Math.floor(value / 62);
  }
  return digits;
}

/** A new random key with its checksum. */
export function generateApiKey(): string {
  const head = API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_LENGTH);
  return head + apiKeyChecksum(head);
}

/**
 * True for a current key whose checksum matches (no database needed). A plain comparison: the
 * checksum is no secret (anyone computes it from the rest of the string they sent), so its
 * timing tells nothing; the two SHA-256 of a constant-time comparison were ~3% of a billed
 * call's CPU (bench/README.md).
 */
export function hasValidChecksum(candidate: string): boolean {
  if (!API_KEY_PATTERN.test(candidate)) return false;
  const split = candidate.length - API_KEY_CHECKSUM_LENGTH;
  return apiKeyChecksum(candidate.slice(0, split)) === candidate.slice(split);
}

/** True for a key issued before checksums (41 characters); only the database can judge it. */
export function isLegacyApiKey(candidate: string): boolean {
  return LEGACY_KEY_PATTERN.test(candidate);
}

/**
 * True when the string may be one of our keys, checked before any database work: a current key
 * with a valid checksum, or a key of the earlier format.
 */
export function isWellFormedApiKey(candidate: string): boolean {
  return hasValidChecksum(candidate) || isLegacyApiKey(candidate);
}

/**
 * Hex SHA-256: random keys need no salt or slow hash; the hash is the lookup index. One-shot
 * `hash` (once per paid call) costs about half of a createHash object's update and digest.
 */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
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
