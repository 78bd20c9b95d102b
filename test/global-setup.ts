/**
 * Runs once before the suite: on the embedded database, the migrated template every test
 * file's fresh database starts from (test/support/migrated-pglite.ts), made by the project's
 * Node outside vitest's module runner.
 */
import { execFileSync } from "node:child_process";
import { NODE_BIN, PROJECT_ROOT } from "./support/processes.ts";

export function setup(): void {
  if (!process.env.DATABASE_URL)
    execFileSync(NODE_BIN, ["test/support/migrated-pglite.ts"], { cwd: PROJECT_ROOT, stdio: "inherit" });
}
