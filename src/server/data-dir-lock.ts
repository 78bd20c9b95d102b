/**
 * PGlite is single-process: only one process may open a data directory. A server records
 * itself in DATA_DIR/server.lock; the CLI then goes through that server's internal listener
 * instead of opening the files, and a second server refuses to start.
 */
import { closeSync, constants, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface LockInfo {
  pid: number;
  role: "server" | "cli";
  internalHost?: string;
  internalPort?: number;
}

const lockPath = (dataDir: string) => path.join(dataDir, "server.lock");

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The live holder of the data directory, or null (a stale lock of a dead process is ignored). */
export function readLock(dataDir: string): LockInfo | null {
  try {
    const info = JSON.parse(readFileSync(lockPath(dataDir), "utf8")) as LockInfo;
    return typeof info.pid === "number" && alive(info.pid) ? info : null;
  } catch {
    return null;
  }
}

/** Takes the lock or returns the live holder that prevents it. */
export function acquireLock(
  dataDir: string,
  info: LockInfo,
): { ok: true; release: () => void } | { ok: false; holder: LockInfo } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const holder = readLock(dataDir);
  if (holder && holder.pid !== process.pid) return { ok: false, holder };
  try {
    unlinkSync(lockPath(dataDir));
  } catch {
    /* no stale lock */
  }
  try {
    // O_EXCL: of two processes racing here, exactly one creates the file.
    const fd = openSync(lockPath(dataDir), constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
    writeFileSync(fd, JSON.stringify(info));
    closeSync(fd);
  } catch {
    const other = readLock(dataDir);
    if (other) return { ok: false, holder: other };
  }
  return {
    ok: true,
    release: () => {
      try {
        if (readLock(dataDir)?.pid === process.pid) unlinkSync(lockPath(dataDir));
      } catch {
        /* already gone */
      }
    },
  };
}

/** Updates the lock once the server knows its internal port. */
export function updateLock(dataDir: string, info: LockInfo): void {
  writeFileSync(lockPath(dataDir), JSON.stringify(info), { mode: 0o600 });
}
