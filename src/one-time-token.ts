/**
 * The one-time tokens the service hands out (web sessions, password setup and reset links, the
 * key reveal, Telegram connect links): 32 random bytes in base64url, stored only as their
 * SHA-256. A 256-bit random token needs no salt or slow hash, and a lookup by its hash is the
 * comparison (nothing secret is compared byte by byte in JavaScript).
 */
import { createHash, randomBytes } from "node:crypto";

/** 43 characters of base64url: also within Telegram's start parameter (1-64 of A-Z a-z 0-9 _ -). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Hex SHA-256 of a token: what the database keeps. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** 32 random bytes, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** True when the string could be one of our tokens (checked before any database work). */
export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}
