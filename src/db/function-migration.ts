/**
 * `npm run db:function -- <function> <migration-name>`: ships a changed SQL function. Makes an
 * empty custom migration with drizzle-kit (`generate --custom`, so the journal and snapshot stay
 * drizzle's) and fills it with src/db/functions/<function>.sql, the function's one readable
 * source. Migrations that have run are never edited; the new one restates the whole function.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DB_DIR = fileURLToPath(new URL("./", import.meta.url));

/** Writes a new migration holding the function's current source; returns its file. */
export function writeFunctionMigration(functionName: string, migrationName: string): string {
  const source = `${DB_DIR}functions/${functionName}.sql`;
  if (!existsSync(source)) throw new Error(`no such function source: src/db/functions/${functionName}.sql`);
  if (!/^[a-z0-9_]+$/.test(migrationName))
    throw new Error("the migration name must be lower-case letters, digits and _");
  execFileSync(
    "npx",
    ["drizzle-kit", "generate", "--custom", `--name=${migrationName}`, "--config", `${DB_DIR}drizzle.config.ts`],
    { stdio: "inherit" },
  );
  const journal = JSON.parse(readFileSync(`${DB_DIR}migrations/meta/_journal.json`, "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  const file = `${DB_DIR}migrations/${journal.entries.at(-1)!.tag}.sql`;
  writeFileSync(file, readFileSync(source, "utf8"));
  return file;
}

if (import.meta.main) {
  const [functionName, migrationName] = process.argv.slice(2);
  if (!functionName || !migrationName) {
    process.stderr.write("usage: npm run db:function -- <function> <migration-name>\n");
    process.exit(2);
  }
  process.stdout.write(`wrote ${writeFunctionMigration(functionName, migrationName)}\n`);
}
