/**
 * Files only the operator's user may read: the data directory (the embedded database and the
 * internal token) is 0700 and nothing in it is readable or writable by group or others, and a
 * secret is written to a new 0600 file and renamed over the old one, never through a symbolic
 * link. PGlite creates its files with mode 0666 and leaves the rest to the process umask, so a
 * server sets the umask to 077 before it opens anything (main.ts) and repairs the modes of
 * what is already there at every start (a directory made by an older version, or copied).
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";

/** The umask of every process that writes into the data directory: owner only. */
export const PRIVATE_UMASK = 0o077;

/** A secret file that is a symbolic link: refused rather than followed. */
export class SymlinkRefusedError extends Error {
  override name = "SymlinkRefusedError";
  constructor(file: string) {
    super(`${file} is a symbolic link; refusing to follow it (remove it, the server writes a new file)`);
  }
}

const isMissing = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";

/**
 * Makes `dir` (created if missing) 0700 and takes group and other permissions off everything
 * under it; symbolic links are neither followed nor changed. Returns how many modes it changed.
 */
export function securePrivateDir(dir: string): number {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let changed = 0;
  const walk = (current: string) => {
    const stat = lstatSync(current);
    if (stat.isSymbolicLink()) return;
    const mode = stat.mode & 0o7777;
    const wanted = stat.isDirectory() ? 0o700 : mode & 0o700;
    if (mode !== wanted) {
      chmodSync(current, wanted);
      changed++;
    }
    if (stat.isDirectory()) for (const name of readdirSync(current)) walk(path.join(current, name));
  };
  walk(dir);
  return changed;
}

/**
 * Writes `content` to `file` as a new 0600 file renamed into place: a reader sees the old
 * secret or the new one, never half of one, and a mode or owner the old file had is not kept.
 * Refuses when `file` is a symbolic link (it would write wherever the link points).
 */
export function writeSecretFile(file: string, content: string): void {
  try {
    if (lstatSync(file).isSymbolicLink()) throw new SymlinkRefusedError(file);
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  // O_EXCL and O_NOFOLLOW: a file or link planted at the temporary name is never written through.
  const fd = openSync(
    temporary,
    constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(temporary);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(temporary, file);
  } catch (err) {
    unlinkSync(temporary);
    throw err;
  }
  try {
    const dirFd = openSync(path.dirname(file), constants.O_RDONLY);
    fsyncSync(dirFd);
    closeSync(dirFd);
  } catch {
    /* the rename is done; a directory that cannot be synced only weakens crash durability */
  }
}

/** The text of a secret file, or null when it does not exist; a symbolic link is refused. */
export function readSecretFile(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (isMissing(err)) return null;
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new SymlinkRefusedError(file);
    throw err;
  }
  try {
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
