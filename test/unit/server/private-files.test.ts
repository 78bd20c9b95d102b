/**
 * Private files: the data directory's modes are repaired to owner-only, secrets are written as a
 * new 0600 file renamed into place (a mode the old file had is not kept, a reader never sees
 * half a secret), and a symbolic link is never followed, neither to write nor to read. The
 * internal token persists in its file until rotated and INTERNAL_TOKEN overrides it.
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBearerCheck } from "../../../src/server/internal-auth.ts";
import {
  clientTokenSource,
  ensureInternalToken,
  internalTokenPath,
  readInternalToken,
  rotateInternalToken,
  serverTokenSource,
} from "../../../src/server/internal-token.ts";
import {
  readSecretFile,
  SymlinkRefusedError,
  securePrivateDir,
  writeSecretFile,
} from "../../../src/server/private-files.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "private-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const modeOf = (file: string) => lstatSync(file).mode & 0o7777;

describe("securePrivateDir", () => {
  it("makes the directory 0700 and takes group and other bits off everything under it, without following links", () => {
    const data = path.join(dir, "data");
    mkdirSync(path.join(data, "base", "1"), { recursive: true });
    writeFileSync(path.join(data, "base", "1", "1259"), "x", { mode: 0o666 });
    writeFileSync(path.join(data, "PG_VERSION"), "17", { mode: 0o644 });
    writeFileSync(path.join(data, "owner-only"), "y", { mode: 0o600 });
    const outside = path.join(dir, "outside");
    writeFileSync(outside, "z", { mode: 0o644 });
    symlinkSync(outside, path.join(data, "link"));
    chmodSync(data, 0o755);
    chmodSync(path.join(data, "base"), 0o777);
    chmodSync(path.join(data, "base", "1"), 0o755);
    chmodSync(path.join(data, "base", "1", "1259"), 0o666);
    chmodSync(path.join(data, "PG_VERSION"), 0o644);
    chmodSync(path.join(data, "owner-only"), 0o600);
    expect(securePrivateDir(data)).toBe(5); // data, base, base/1, 1259, PG_VERSION
    expect(modeOf(data)).toBe(0o700);
    expect(modeOf(path.join(data, "base"))).toBe(0o700);
    expect(modeOf(path.join(data, "base", "1"))).toBe(0o700);
    expect(modeOf(path.join(data, "base", "1", "1259"))).toBe(0o600);
    expect(modeOf(path.join(data, "PG_VERSION"))).toBe(0o600);
    expect(modeOf(path.join(data, "owner-only"))).toBe(0o600);
    expect(modeOf(outside)).toBe(0o644);
    expect(securePrivateDir(data)).toBe(0);
  });

  it("creates a missing directory 0700", () => {
    const data = path.join(dir, "new", "data");
    securePrivateDir(data);
    expect(modeOf(data)).toBe(0o700);
  });
});

describe("writeSecretFile / readSecretFile", () => {
  it("writes a new 0600 file renamed into place: the old file's mode is not kept and no temporary file is left", () => {
    const file = path.join(dir, "secret");
    writeFileSync(file, "old\n", { mode: 0o644 });
    chmodSync(file, 0o644);
    const before = statSync(file).ino;
    writeSecretFile(file, "new\n");
    expect(readFileSync(file, "utf8")).toBe("new\n");
    expect(modeOf(file)).toBe(0o600);
    expect(statSync(file).ino).not.toBe(before);
    expect(readdirSync(dir)).toEqual(["secret"]);
  });

  it("refuses a symbolic link, to write and to read, and leaves its target alone", () => {
    const target = path.join(dir, "target");
    writeFileSync(target, "target\n", { mode: 0o644 });
    const link = path.join(dir, "secret");
    symlinkSync(target, link);
    expect(() => writeSecretFile(link, "new\n")).toThrow(SymlinkRefusedError);
    expect(() => readSecretFile(link)).toThrow(SymlinkRefusedError);
    expect(readFileSync(target, "utf8")).toBe("target\n");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });

  it("reads null for a missing file", () => {
    expect(readSecretFile(path.join(dir, "none"))).toBeNull();
  });
});

describe("the internal token", () => {
  it("is made once and kept across starts until rotated; INTERNAL_TOKEN overrides the file", () => {
    const first = ensureInternalToken({ internalToken: null, dataDir: dir });
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(modeOf(internalTokenPath(dir))).toBe(0o600);
    expect(ensureInternalToken({ internalToken: null, dataDir: dir })).toBe(first);
    expect(readInternalToken(dir)).toBe(first);
    const rotated = rotateInternalToken(dir);
    expect(rotated).not.toBe(first);
    expect(ensureInternalToken({ internalToken: null, dataDir: dir })).toBe(rotated);
    expect(ensureInternalToken({ internalToken: "an-operator-token-0123", dataDir: dir })).toBe(
      "an-operator-token-0123",
    );
    expect(readInternalToken(dir)).toBe(rotated);
  });

  it("a running server follows a rotation at its next check, and accepts only the new token", () => {
    const source = serverTokenSource({ internalToken: null, dataDir: dir });
    const check = createBearerCheck(() => source.current());
    const old = readInternalToken(dir)!;
    expect(check(`Bearer ${old}`)).toBe(true);
    const fresh = rotateInternalToken(dir);
    expect(check(`Bearer ${fresh}`)).toBe(true);
    expect(check(`Bearer ${old}`)).toBe(false);
    // A deleted file keeps the token last read in force.
    rmSync(internalTokenPath(dir));
    expect(check(`Bearer ${fresh}`)).toBe(true);
  });

  it("a client re-reads the file on reload(); INTERNAL_TOKEN never changes", () => {
    rotateInternalToken(dir);
    const client = clientTokenSource({ internalToken: null, dataDir: dir })!;
    const before = client.current();
    expect(client.reload()).toBe(false);
    const fresh = rotateInternalToken(dir);
    expect(client.current()).toBe(before);
    expect(client.reload()).toBe(true);
    expect(client.current()).toBe(fresh);
    const fixed = clientTokenSource({ internalToken: "an-operator-token-0123", dataDir: dir })!;
    expect(fixed.reload()).toBe(false);
    expect(fixed.current()).toBe("an-operator-token-0123");
    expect(clientTokenSource({ internalToken: null, dataDir: path.join(dir, "none") })).toBeNull();
  });

  it("a token file that is a symbolic link or holds no token is refused with a clear reason", () => {
    const target = path.join(dir, "elsewhere");
    writeFileSync(target, "a-token-somewhere-else-0123456789\n");
    symlinkSync(target, internalTokenPath(dir));
    expect(() => ensureInternalToken({ internalToken: null, dataDir: dir })).toThrow(/symbolic link/);
    expect(() => rotateInternalToken(dir)).toThrow(/symbolic link/);
    expect(readFileSync(target, "utf8")).toBe("a-token-somewhere-else-0123456789\n");
    rmSync(internalTokenPath(dir));
    writeFileSync(internalTokenPath(dir), "short\n", { mode: 0o600 });
    expect(() => readInternalToken(dir)).toThrow(/does not hold a token/);
  });
});
