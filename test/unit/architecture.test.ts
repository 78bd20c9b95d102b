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

/**
 * What any folder may import: the shared single-file modules at the top of src/, gen/, and the
 * configuration (src/config.ts with the sections in src/config/, one layer named "config").
 */
const SHARED = ["clock.ts", "errors.ts", "logger.ts", "one-time-token.ts", "request-context.ts", "retry.ts", "gen", "config"];

/** What each folder may import besides itself and SHARED (docs/architecture.md, "Folders"). */
const ALLOWED: Record<string, readonly string[]> = {
  // Only the market's vocabulary (the symbol rule, the timeframes): see the leaf check below.
  config: ["market"],
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

/** The files of a layer: its folder, and src/config.ts for the configuration. */
const layerFiles = (layer: string) => [...sourceFiles(path.join(SRC, layer)), ...(layer === "config" ? [path.join(SRC, "config.ts")] : [])];

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
  const top = target.split(path.sep)[0]!;
  return top === "config.ts" ? "config" : top;
}

/** Every import of the file: static, `export … from` and dynamic `import("…")`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/gm)].map((m) => (m[1] ?? m[2])!);
}

const violations = (folder: string) =>
  layerFiles(folder).flatMap((file) =>
    importsOf(file)
      .map((specifier) => ({ specifier, top: topOf(file, specifier) }))
      .filter(({ top }) => top !== null && top !== folder && (folder === "config" || !SHARED.includes(top)) && !ALLOWED[folder]!.includes(top))
      .map(({ specifier }) => `${path.relative(SRC, file)} imports ${specifier}`),
  );

describe("import directions (docs/architecture.md)", () => {
  it.each(Object.keys(ALLOWED))("src/%s imports only what its row allows", (folder) => {
    expect(violations(folder)).toEqual([]);
  });

  it("config imports from other folders only modules that import nothing of src/, so it stays at the bottom", () => {
    const imported = layerFiles("config").flatMap((file) =>
      importsOf(file)
        .filter((specifier) => topOf(file, specifier) === "market")
        .map((specifier) => path.resolve(path.dirname(file), specifier)),
    );
    expect(imported.length).toBeGreaterThan(0);
    for (const leaf of new Set(imported)) expect(importsOf(leaf).filter((s) => s.startsWith(".")), path.relative(SRC, leaf)).toEqual([]);
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
    expect(topOf(file, "../config.ts")).toBe("config");
    expect(topOf(file, "../config/feeder.ts")).toBe("config");
  });
});
