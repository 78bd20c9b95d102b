/**
 * A migrated embedded database as a tarball, made once (vitest's globalSetup runs this file) and
 * kept beside PGlite's own template, named by a hash of the migrations and the PGlite version: each test
 * file's fresh in-memory database is unpacked from it instead of running every migration again
 * (about a third of the cost of a new database). migrateDb still runs after it and finds
 * nothing to do, so a stale tarball cannot hide a migration.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { migrationsFolder } from "../../src/db/client.ts";
import {
  makePgliteTemplate,
  pgliteOptions,
  pgliteTemplatePath,
  writeDataDirTarball,
} from "../../src/db/pglite-setup.ts";
import { PROJECT_ROOT } from "./processes.ts";

const PGLITE_PACKAGE = path.join(PROJECT_ROOT, "node_modules/@electric-sql/pglite/package.json");

/** Every file under the migrations folder, sorted, with its contents, hashed with PGlite's version. */
function migrationsHash(): string {
  const hash = createHash("sha256").update(
    (JSON.parse(readFileSync(PGLITE_PACKAGE, "utf8")) as { version: string }).version,
  );
  const files = readdirSync(migrationsFolder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  for (const file of files)
    hash.update(path.relative(migrationsFolder, file)).update("\0").update(readFileSync(file)).update("\0");
  return hash.digest("hex").slice(0, 16);
}

/** Where the tarball for the current migrations lives. */
export function migratedTemplatePath(): string {
  return path.join(PROJECT_ROOT, "node_modules/.cache/signals", `pglite-migrated-${migrationsHash()}.tgz`);
}

/** Makes the tarball unless it is there: a new in-memory database, migrated, dumped. */
export async function makeMigratedTemplate(): Promise<void> {
  const file = migratedTemplatePath();
  if (existsSync(file)) return;
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  const client = await PGlite.create("memory://", pgliteOptions("memory://", PGlite.defaultStartParams));
  try {
    await migrate(drizzle(client), { migrationsFolder });
    await writeDataDirTarball(client, file);
  } finally {
    await client.close();
  }
}

let template: Blob | undefined;

/**
 * The tarball, read and unzipped once per test process; undefined when it was not made (the database then migrates
 * from scratch). Typed as a plain tar, PGlite unpacks it as it is; given the gzipped bytes, it first failed to read
 * them as a plain tar, then unzipped them through a web stream, for every new database: 0.39–0.43 s a database
 * against 0.22–0.26 s (quiet, 2-core machine; 4.9 MB zipped, 42 MB plain, held once per worker).
 */
export function migratedTemplate(): Blob | undefined {
  if (template) return template;
  const file = migratedTemplatePath();
  if (existsSync(file)) template = new Blob([gunzipSync(readFileSync(file))], { type: "application/x-tar" });
  return template;
}

/**
 * Fills `dataDir`, a new empty directory, with the migrated database, for a server or CLI process that would
 * otherwise run every migration there (about 3 s of CPU); does nothing when the tarball was not made (PostgreSQL).
 */
export function unpackMigratedTemplate(dataDir: string): void {
  const file = migratedTemplatePath();
  // The tarball's names start with "/", which tar strips (and says so on stderr).
  if (existsSync(file)) execFileSync("tar", ["-xzf", file, "-C", dataDir], { stdio: "ignore" });
}

// Run as a script by the global setup, outside vitest's module runner (which lacks import.meta.resolve). PGlite's
// initdb template comes first: node_modules installed before its name changed lacks it until the next `npm install`,
// and without it every test server on a new data directory would run initdb itself.
if (import.meta.main) {
  if (!existsSync(pgliteTemplatePath())) await makePgliteTemplate();
  await makeMigratedTemplate();
}
