/**
 * How the embedded database (PGlite) is opened: its Postgres settings, and a freshly
 * initialised data directory kept as a tarball per installed PGlite version, so that a new
 * embedded database is unpacked instead of running initdb in the server process.
 *
 * Why: PGlite's initdb runs a second Postgres instance beside the first and snapshots its
 * 128 MiB heap, so a first start on a bare machine peaked at ~1.1 GiB (~0.5 GiB even with
 * --liftoff-only) and left ~250 MiB of garbage behind; unpacking the same files peaks like a
 * restart (docs/decisions.md, bench/README.md "embedded memory"). `npm install` makes the
 * tarball (the `prepare` script runs this file); without it the database falls back to initdb.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite, PGliteOptions } from "@electric-sql/pglite";

/**
 * Postgres settings of the embedded database. PGlite's default shared_buffers (128MB) grows its
 * WebAssembly memory past the 128 MiB the module declares (to ~189 MiB, a grow that copies the
 * whole heap) and keeps most of it resident; the embedded database is small and its files sit
 * in the OS page cache anyway. initdb gets the same values, so a new data directory's
 * postgresql.conf agrees with them.
 */
export const PGLITE_SETTINGS: readonly string[] = ["shared_buffers=16MB"];

/** PGlite's options for a data directory: our settings; the template for a new one when there is one. */
export function pgliteOptions(
  dataDir: string,
  defaultStartParams: readonly string[],
  useTemplate = true,
): PGliteOptions {
  const isNew = dataDir.startsWith("memory://") || !existsSync(path.join(dataDir, "PG_VERSION"));
  const template = useTemplate && isNew ? pgliteTemplate() : undefined;
  return {
    startParams: [...defaultStartParams, ...PGLITE_SETTINGS.flatMap((setting) => ["-c", setting])],
    initDbStartParams: PGLITE_SETTINGS.flatMap((setting) => ["--set", setting]),
    ...(template ? { loadDataDir: template } : {}),
  };
}

/**
 * Where the tarball for the installed PGlite lives (node_modules/.cache), keyed by its version and our settings:
 * everything initdb's output depends on, so a file of that name never needs making again.
 */
export function pgliteTemplatePath(): string {
  const entry = fileURLToPath(import.meta.resolve("@electric-sql/pglite"));
  const packageDir = path.resolve(path.dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as { version: string };
  const settings = createHash("sha256").update(PGLITE_SETTINGS.join("\n")).digest("hex").slice(0, 8);
  return path.resolve(packageDir, "..", "..", ".cache", "signals", `pglite-${version}-${settings}-datadir.tgz`);
}

/** The tarball as PGlite's `loadDataDir` takes it, or undefined when it was not made. */
export function pgliteTemplate(): Blob | undefined {
  const file = pgliteTemplatePath();
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined;
}

/** Runs initdb once (in memory, with the server's settings) and writes the tarball. */
export async function makePgliteTemplate(): Promise<string> {
  const { PGlite } = await import("@electric-sql/pglite");
  const file = pgliteTemplatePath();
  const client = await PGlite.create("memory://", pgliteOptions("memory://", PGlite.defaultStartParams, false));
  try {
    await writeDataDirTarball(client, file);
  } finally {
    await client.close();
  }
  return file;
}

/** Writes the data directory of `client` to `file` as a gzipped tarball (what `loadDataDir` takes). */
export async function writeDataDirTarball(client: Pick<PGlite, "dumpDataDir">, file: string): Promise<void> {
  const dump = Buffer.from(await (await client.dumpDataDir("gzip")).arrayBuffer());
  mkdirSync(path.dirname(file), { recursive: true });
  // Written aside then renamed, so a reader never sees half a tarball.
  writeFileSync(`${file}.${process.pid}`, dump);
  renameSync(`${file}.${process.pid}`, file);
}

// Every `npm install` runs this: initdb costs seconds of CPU, so a template already made for this PGlite and these
// settings is kept (it is written whole or not at all, see writeDataDirTarball).
if (import.meta.main) {
  const kept = existsSync(pgliteTemplatePath());
  const file = kept ? pgliteTemplatePath() : await makePgliteTemplate();
  process.stdout.write(`PGlite data directory template: ${file}${kept ? " (already made)" : ""}\n`);
}
