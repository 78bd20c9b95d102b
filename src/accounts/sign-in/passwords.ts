/**
 * Member passwords: scrypt (node:crypto) stored as a self-describing string
 * `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>`, so the cost can be raised later and old
 * hashes still verify. Verification compares in constant time. Hashing is CPU- and
 * memory-heavy (128 MiB per hash at the default cost), so at most HASH_CONCURRENCY run at once.
 * New hashes are written at the configured cost (PASSWORD_SCRYPT_LOG_N); a hash is always
 * verified at the cost stored in it.
 */
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/** Shortest accepted password (the operator CLI and the setup page share the rule). */
export const MIN_PASSWORD_LENGTH = 10;
/** Longest accepted password: enough for any passphrase, and bounds the work per attempt. */
export const MAX_PASSWORD_LENGTH = 1024;

/** scrypt's cost parameters: N = 2^logN, block size r, parallelism p. */
export interface ScryptCost {
  readonly logN: number;
  readonly r: number;
  readonly p: number;
}

/** OWASP's scrypt recommendation: N = 2^17, r = 8, p = 1 (about 0.35 s and 128 MiB here). */
export const DEFAULT_SCRYPT: ScryptCost = Object.freeze({ logN: 17, r: 8, p: 1 });
/** The log2 N a stored hash may have (a corrupted row must not cost minutes of CPU or gigabytes). */
export const SCRYPT_LOG_N_RANGE = Object.freeze({ min: 10, max: 20 });
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Two cores: more parallel hashes would only queue in libuv while holding their memory. */
const HASH_CONCURRENCY = 2;

/** A password the rules refuse; the message can be shown as is. */
export class PasswordPolicyError extends Error {
  override name = "PasswordPolicyError";
}

/** Throws PasswordPolicyError when the password is too short or too long. */
export function checkPasswordPolicy(password: string): void {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH)
    throw new PasswordPolicyError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters long`);
  if (length > MAX_PASSWORD_LENGTH)
    throw new PasswordPolicyError(`the password must be at most ${MAX_PASSWORD_LENGTH} characters long`);
}

/**
 * Why a new password typed twice in a form is refused, as a sentence for the form; null when it
 * may be set.
 */
export function newPasswordProblem(password: string, repeated: string): string | null {
  if (password !== repeated) return "The two passwords differ. Type the same password twice.";
  try {
    checkPasswordPolicy(password);
    return null;
  } catch (err) {
    if (err instanceof PasswordPolicyError) return `Not set: ${err.message}.`;
    throw err;
  }
}

let running = 0;
const waiting: Array<() => void> = [];

async function withHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running >= HASH_CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  // maxmem must exceed 128·N·r·p, or node refuses the parameters.
  const maxmem = 128 * N * r * p + 16 * 1024 * 1024;
  return withHashSlot(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password.normalize("NFC"), salt, HASH_BYTES, { N, r, p, maxmem }, (err, key) =>
          err ? reject(err) : resolve(key),
        );
      }),
  );
}

/** Hashes a password that passed checkPasswordPolicy into the self-describing string. */
export async function hashPassword(password: string, cost: ScryptCost = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, cost.logN, cost.r, cost.p);
  return [
    "scrypt",
    String(2 ** cost.logN),
    String(cost.r),
    String(cost.p),
    salt.toString("base64url"),
    hash.toString("base64url"),
  ].join("$");
}

interface ParsedHash {
  logN: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

/** Parses a stored hash; null when it is not one we could have written (bounded costs). */
function parseHash(stored: string): ParsedHash | null {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return null;
  const [, nText, rText, pText, saltText, hashText] = parts as [string, string, string, string, string, string];
  const N = Number(nText);
  const logN = Math.log2(N);
  const r = Number(rText);
  const p = Number(pText);
  // Bounds keep a corrupted row from turning one sign-in into minutes of CPU or gigabytes.
  if (
    !Number.isInteger(logN) ||
    logN < SCRYPT_LOG_N_RANGE.min ||
    logN > SCRYPT_LOG_N_RANGE.max ||
    !Number.isInteger(r) ||
    r < 1 ||
    r > 32 ||
    !Number.isInteger(p) ||
    p < 1 ||
    p > 16
  )
    return null;
  const salt = Buffer.from(saltText, "base64url");
  const hash = Buffer.from(hashText, "base64url");
  if (salt.length < 8 || hash.length < 16) return null;
  return { logN, r, p, salt, hash };
}

/** True when `password` matches the stored hash; false for a wrong password or an unreadable hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if ([...password].length > MAX_PASSWORD_LENGTH) return false;
  const parsed = parseHash(stored);
  if (parsed === null) return false;
  const candidate = await derive(password, parsed.salt, parsed.logN, parsed.r, parsed.p);
  return candidate.length === parsed.hash.length && timingSafeEqual(candidate, parsed.hash);
}

/**
 * True when a readable stored hash was written at another cost than `cost`: the member's next
 * successful sign-in hashes the password again at `cost`, so a changed setting reaches every
 * member who signs in (and an unknown email's dummy check, made at `cost`, stays as slow as theirs).
 */
export function needsRehash(stored: string, cost: ScryptCost): boolean {
  const parsed = parseHash(stored);
  return parsed !== null && (parsed.logN !== cost.logN || parsed.r !== cost.r || parsed.p !== cost.p);
}

/** One dummy hash per cost, made at its first use. */
const dummyHashes = new Map<string, Promise<string>>();

/**
 * Spends the same work as a real verification for an email with no password, so the answer
 * time does not tell which emails are members: `cost` is the one new hashes are written at.
 */
export async function verifyAgainstDummy(password: string, cost: ScryptCost): Promise<false> {
  const key = `${cost.logN}$${cost.r}$${cost.p}`;
  let dummy = dummyHashes.get(key);
  if (dummy === undefined) {
    dummy = hashPassword("not a real password, only spends time", cost);
    dummyHashes.set(key, dummy);
  }
  await verifyPassword(password, await dummy);
  return false;
}
