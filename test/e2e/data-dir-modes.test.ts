/**
 * The embedded server's files are the operator's alone: after a start the data directory is
 * 0700 and no file or directory in it is readable or writable by group or others (PGlite asks
 * for 0666; the server's umask and its repair pass at every start make them private), an older
 * directory with loose modes is repaired at the next start with its token kept, and a token file
 * that is a symbolic link stops the start instead of being followed.
 */
import {
  chmodSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv, runServerToExit, startServerProcess } from "../support/processes.ts";

/** Every path under `dir` (itself included) whose mode lets group or others in. */
function looseModes(dir: string): string[] {
  const loose: string[] = [];
  const walk = (p: string) => {
    const stat = lstatSync(p);
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & 0o077) !== 0) loose.push(`${path.relative(dir, p) || "."} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
  return loose;
}

function loosen(dir: string): number {
  let n = 0;
  const walk = (p: string) => {
    const stat = lstatSync(p);
    chmodSync(p, stat.isDirectory() ? 0o777 : 0o666);
    n++;
    if (stat.isDirectory()) for (const name of readdirSync(p)) walk(path.join(p, name));
  };
  walk(dir);
  return n;
}

describe("the embedded data directory's modes", () => {
  let root: string;
  let dataDir: string;
  const env = () =>
    childEnv({ DATA_DIR: dataDir, PORT: "0", INTERNAL_PORT: "0", DEMO_ACCOUNT: "false", LOG_LEVEL: "info" });

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), "signals-modes-"));
    dataDir = path.join(root, "data");
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("a first start: the directory is 0700, the token 0600, and nothing in it is open to group or others", async () => {
    const server = await startServerProcess(env());
    try {
      // Let the demo feed write a while (new files come from the running database too).
      await fetch(`${server.baseUrl}/status`);
      expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
      expect(lstatSync(path.join(dataDir, "internal-token")).mode & 0o777).toBe(0o600);
      expect(readdirSync(dataDir)).toContain("PG_VERSION");
      expect(looseModes(dataDir)).toEqual([]);
    } finally {
      await server.stop();
    }
    expect(looseModes(dataDir)).toEqual([]);
  }, 90_000);

  it("loose modes left by an older version are repaired at the next start, and the token is kept", async () => {
    const token = readFileSync(path.join(dataDir, "internal-token"), "utf8");
    expect(loosen(dataDir)).toBeGreaterThan(100);
    const server = await startServerProcess(env());
    try {
      expect(looseModes(dataDir)).toEqual([]);
      expect(readFileSync(path.join(dataDir, "internal-token"), "utf8")).toBe(token);
      expect(
        server
          .logs()
          .some((l) => l.msg === "data directory files were readable or writable by other users; made private"),
      ).toBe(true);
    } finally {
      await server.stop();
    }
  }, 90_000);

  it("a token file that is a symbolic link stops the start; the link's target is not touched", async () => {
    const target = path.join(root, "elsewhere");
    writeFileSync(target, "not-the-servers-token-0123456789\n", { mode: 0o644 });
    unlinkSync(path.join(dataDir, "internal-token"));
    symlinkSync(target, path.join(dataDir, "internal-token"));
    const exit = await runServerToExit(env());
    expect(exit.code).toBe(1);
    expect(exit.stderr).toMatch(/internal-token is a symbolic link; refusing to follow it/);
    expect(readFileSync(target, "utf8")).toBe("not-the-servers-token-0123456789\n");
    expect(lstatSync(target).mode & 0o777).toBe(0o644);
  }, 90_000);
});
