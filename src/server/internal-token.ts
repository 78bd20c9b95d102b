/**
 * The internal listener's bearer token. INTERNAL_TOKEN wins when it is set. Otherwise the
 * token lives in DATA_DIR/internal-token (0600, written as a new file renamed into place,
 * never through a symbolic link): made once, on the first start, and kept across restarts
 * until the operator runs `signals token rotate`. A running server re-reads the file when it
 * changes, so a rotation takes effect at once without a restart; feeders and the CLI read the
 * same file (a feeder again whenever the server refuses it).
 */
import { statSync } from "node:fs";
import path from "node:path";
import { newToken } from "../one-time-token.ts";
import { readSecretFile, writeSecretFile } from "./private-files.ts";

/** Shortest token accepted (INTERNAL_TOKEN's rule too). */
export const MIN_TOKEN_LENGTH = 16;

export const internalTokenPath = (dataDir: string) => path.join(dataDir, "internal-token");

/** Where the token comes from, for what the server, the feeder and the CLI hold. */
export interface InternalTokenSource {
  /** The token to use now. */
  current(): string;
  /** The file it is read from, or null when INTERNAL_TOKEN fixes it. */
  readonly file: string | null;
}

function parseToken(text: string, file: string): string | null {
  const token = text.trim();
  if (token === "") return null;
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))
    throw new Error(
      `${file} does not hold a token (16 or more characters without spaces); run: npx signals token rotate`,
    );
  return token;
}

/** Reads the token file: the token, or null when there is none yet (a symbolic link throws). */
export function readInternalToken(dataDir: string): string | null {
  const file = internalTokenPath(dataDir);
  const text = readSecretFile(file);
  return text === null ? null : parseToken(text, file);
}

/** Writes a new random token to the file and returns it. */
export function rotateInternalToken(dataDir: string): string {
  const token = newToken();
  writeSecretFile(internalTokenPath(dataDir), `${token}\n`);
  return token;
}

/**
 * The token a server uses: INTERNAL_TOKEN, else the file's (made on the first start). Made
 * sure of once per start, by the cluster primary for all its workers or by a single server process.
 */
export function ensureInternalToken(config: { internalToken: string | null; dataDir: string }): string {
  if (config.internalToken) return config.internalToken;
  return readInternalToken(config.dataDir) ?? rotateInternalToken(config.dataDir);
}

/**
 * The server's view of the token: fixed by INTERNAL_TOKEN, or the file's, re-read whenever the
 * file changes (one stat per check; a rotation is a new file, so its inode changes). While the
 * file is missing or unreadable the last token read stays in force.
 */
export function serverTokenSource(config: { internalToken: string | null; dataDir: string }): InternalTokenSource {
  const first = ensureInternalToken(config);
  if (config.internalToken) return { current: () => first, file: null };
  const file = internalTokenPath(config.dataDir);
  let token = first;
  let seen = "";
  return {
    file,
    current() {
      try {
        const stat = statSync(file);
        const stamp = `${stat.ino}:${stat.mtimeMs}:${stat.size}`;
        if (stamp !== seen) {
          token = readInternalToken(config.dataDir) ?? token;
          seen = stamp;
        }
      } catch {
        /* keep the last token read */
      }
      return token;
    },
  };
}

/**
 * A client's view (feeder, CLI): INTERNAL_TOKEN, or the file read now and again by reload()
 * (after the server refused it). Null when neither is there.
 */
export function clientTokenSource(config: {
  internalToken: string | null;
  dataDir: string;
}): (InternalTokenSource & { reload(): boolean }) | null {
  if (config.internalToken) {
    const fixed = config.internalToken;
    return { current: () => fixed, file: null, reload: () => false };
  }
  let token = readInternalToken(config.dataDir);
  if (token === null) return null;
  return {
    file: internalTokenPath(config.dataDir),
    current: () => token!,
    /** Re-reads the file; true when it now holds another token. */
    reload() {
      let next: string | null = null;
      try {
        next = readInternalToken(config.dataDir);
      } catch {
        return false;
      }
      if (next === null || next === token) return false;
      token = next;
      return true;
    },
  };
}
