/**
 * The import directions of docs/architecture.md, checked on the source: each folder of src/
 * imports only the folders its row allows, so the structure keeps flowing downward (entry →
 * server → services → domains → engine/db/gen). A folder not in the table is unconstrained
 * here, but no listed folder may import it unless its row says so.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** Shared single-file modules at the top of src/ that any folder may import. */
const SHARED = ["clock.ts", "config.ts", "errors.ts", "logger.ts", "one-time-token.ts", "request-context.ts", "retry.ts", "gen"];

/** What each folder may import besides itself and SHARED (docs/architecture.md, "Folders"). */
const ALLOWED: Record<string, readonly string[]> = {
  engine: [],
  db: [],
  performance: [],
  observability: ["db"],
  billing: ["db"],
  accounts: ["db", "billing", "market"],
  payments: ["db", "billing"],
  market: ["db", "engine"],
  alerts: ["db", "market", "accounts"],
  events: ["db", "market"],
  signals: ["db", "market", "accounts", "billing", "observability"],
  "market-data": ["db", "market", "accounts", "observability", "signals"],
  "track-record": ["db", "engine", "market", "accounts", "performance", "signals"],
  web: ["db", "market", "accounts", "billing", "alerts", "signals", "payments", "performance", "track-record"],
  admin: ["db", "accounts", "billing", "alerts", "payments"],
  doctor: ["db", "payments", "alerts"],
  server: ["db", "engine", "market", "accounts", "billing", "alerts", "events", "signals", "market-data", "observability", "web", "admin", "payments", "doctor"],
  feeder: ["engine", "market", "market-data", "server"],
  cli: ["db", "market", "market-data", "alerts", "admin", "server", "feeder", "doctor", "main.ts"],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith(".ts") ? [full] : [];
  });
}

/** The top-level part of src/ (a folder, a shared file, or "gen") that a relative import lands in. */
function topOf(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null; // a package
  const target = path.relative(SRC, path.resolve(path.dirname(file), specifier));
  if (target.startsWith(`..${path.sep}gen`)) return "gen";
  return target.split(path.sep)[0]!;
}

/** Every import of the file: static, `export … from` and dynamic `import("…")`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/gm)].map((m) => (m[1] ?? m[2])!);
}

const violations = (folder: string) =>
  sourceFiles(path.join(SRC, folder)).flatMap((file) =>
    importsOf(file)
      .map((specifier) => ({ specifier, top: topOf(file, specifier) }))
      .filter(({ top }) => top !== null && top !== folder && !SHARED.includes(top) && !ALLOWED[folder]!.includes(top))
      .map(({ specifier }) => `${path.relative(SRC, file)} imports ${specifier}`),
  );

describe("import directions (docs/architecture.md)", () => {
  it.each(Object.keys(ALLOWED))("src/%s imports only what its row allows", (folder) => {
    expect(violations(folder)).toEqual([]);
  });

  it("market, engine and db never import signals, web or server", () => {
    for (const folder of ["market", "engine", "db", "performance"]) {
      for (const forbidden of ["signals", "web", "server"]) expect(ALLOWED[folder]).not.toContain(forbidden);
    }
  });

  it("finds an upward import when there is one (the check itself works)", () => {
    const file = path.join(SRC, "market", "example.ts");
    expect(topOf(file, "../signals/request.ts")).toBe("signals");
    expect(topOf(file, "../../gen/signals/v1/signals_pb.js")).toBe("gen");
    expect(topOf(file, "./feed.ts")).toBe("market");
  });
});
