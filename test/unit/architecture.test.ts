/**
 * The import rules of docs/architecture.md, checked on the source with no exemptions. The
 * "Folders" table of that page is read here: its rows go from the bottom of the structure to
 * the top, and each row says which folders it may import. So the code flows downward when
 * every folder imports only what its row allows and every row allows only rows above it in
 * the table (earlier rows). Every folder and top-level module of src/ has a row or is one of
 * the shared modules below; the configuration (src/config.ts and src/config/) is a row that
 * every later row may import. The code's folder graph has no cycle.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const ARCHITECTURE = fileURLToPath(new URL("../../docs/architecture.md", import.meta.url));

/** Shared single-file modules at the top of src/ (and gen/): any folder may import them, they import no folder. */
const SHARED_FILES = [
  "clock.ts",
  "errors.ts",
  "logger.ts",
  "one-time-token.ts",
  "request-context.ts",
  "retry.ts",
  "gen",
];
/** The configuration's row: every row after it may import it, as if shared. */
const CONFIG = "config";

/** The "Folders" table: each row's folder (or top-level file) and what it may import, bottom row first. */
function tableOf(markdown: string): Array<{ layer: string; mayImport: string[] }> {
  const section = markdown.slice(markdown.indexOf("## Folders"));
  return [...section.matchAll(/^\| `([\w.-]+?)\/?` \| [^\n]*? \| ([^|\n]*) \|$/gm)].map((m) => ({
    layer: m[1]!,
    mayImport:
      m[2]!.trim() === "nothing"
        ? []
        : m[2]!.split(",").map((name) => name.trim().replace(/`/g, "").replace(/\/$/, "")),
  }));
}

const TABLE = tableOf(readFileSync(ARCHITECTURE, "utf8"));
const LAYERS = TABLE.map((row) => row.layer);
const ALLOWED: Record<string, readonly string[]> = Object.fromEntries(TABLE.map((row) => [row.layer, row.mayImport]));

function sourceFiles(at: string): string[] {
  if (!statSync(at).isDirectory()) return at.endsWith(".ts") ? [at] : [];
  return readdirSync(at).flatMap((name) => sourceFiles(path.join(at, name)));
}

/** The files of a layer: its folder or file, and src/config.ts with src/config/. */
const layerFiles = (layer: string) => [
  ...sourceFiles(path.join(SRC, layer)),
  ...(layer === CONFIG ? [path.join(SRC, "config.ts")] : []),
];

/** The top-level part of src/ (a folder, a top-level file, "config" or "gen") that a relative import lands in. */
function topOf(file: string, specifier: string): string | null {
  if (!specifier.startsWith(".")) return null; // a package
  const target = path.relative(SRC, path.resolve(path.dirname(file), specifier));
  if (target.startsWith(`..${path.sep}gen`)) return "gen";
  const top = target.split(path.sep)[0]!;
  return top === "config.ts" ? CONFIG : top;
}

/** Every import of the file: static, `export … from`, bare `import "…"` and dynamic `import("…")`. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const pattern =
    /(?:^|\s)(?:import|export)\s[^;]*?from\s+"([^"]+)"|(?:^|\s)import\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/gm;
  return [...text.matchAll(pattern)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

/** The layers (top-level parts of src/) the files import, other than their own. */
function importedBy(files: readonly string[], own: string): Set<string> {
  const tops = files.flatMap((file) => importsOf(file).map((specifier) => topOf(file, specifier)));
  return new Set(tops.filter((top): top is string => top !== null && top !== own));
}

/** What a layer may import: its row, the shared modules, and the configuration when its row comes after it. */
const mayImport = (layer: string, top: string) =>
  ALLOWED[layer]!.includes(top) ||
  SHARED_FILES.includes(top) ||
  (top === CONFIG && LAYERS.indexOf(layer) > LAYERS.indexOf(CONFIG));

const violations = (layer: string) =>
  layerFiles(layer).flatMap((file) =>
    importsOf(file)
      .map((specifier) => ({ specifier, top: topOf(file, specifier) }))
      .filter(({ top }) => top !== null && top !== layer && !mayImport(layer, top))
      .map(({ specifier }) => `${path.relative(SRC, file)} imports ${specifier}`),
  );

/** Every cycle of a graph, each as "a → b → a". */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const found: string[] = [];
  const finished = new Set<string>();
  const visit = (node: string, trail: string[]): void => {
    if (trail.includes(node)) {
      found.push([...trail.slice(trail.indexOf(node)), node].join(" → "));
      return;
    }
    if (finished.has(node)) return;
    for (const next of graph.get(node) ?? []) visit(next, [...trail, node]);
    finished.add(node);
  };
  for (const node of graph.keys()) visit(node, []);
  return found;
}

/** The code's graph between the top-level parts of src/ (gen/ left out: it imports nothing of src/). */
function codeGraph(): Map<string, Set<string>> {
  const parts = [...LAYERS, ...SHARED_FILES.filter((name) => name !== "gen")];
  return new Map(parts.map((part) => [part, importedBy(layerFiles(part), part)] as const));
}

/** The code's graph between the modules of src/, each named by its path under src/. */
function moduleGraph(): Map<string, Set<string>> {
  const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".ts"));
  return new Map(
    files.map((name) => {
      const file = path.join(SRC, name);
      const targets = importsOf(file)
        .filter((specifier) => specifier.startsWith("."))
        .map((specifier) => path.relative(SRC, path.resolve(path.dirname(file), specifier)))
        .filter((target) => !target.startsWith(".."));
      return [name, new Set(targets)] as const;
    }),
  );
}

describe("import directions (docs/architecture.md)", () => {
  it("reads the table of docs/architecture.md", () => {
    expect(LAYERS).toContain("engine");
    expect(LAYERS).toContain("server");
    expect(ALLOWED.engine).toEqual([]);
  });

  it("every folder and top-level module of src/ has a row, or is a shared module", () => {
    const tops = readdirSync(SRC)
      .filter((name) => name !== "config.ts")
      .map((name) => name);
    const unlisted = tops.filter((name) => !LAYERS.includes(name) && !SHARED_FILES.includes(name));
    expect(unlisted).toEqual([]);
  });

  it("every row may import only rows above it in the table, so every allowed import points downward", () => {
    const upward = TABLE.flatMap((row, at) =>
      row.mayImport.filter((name) => !LAYERS.slice(0, at).includes(name)).map((name) => `${row.layer} → ${name}`),
    );
    expect(upward).toEqual([]);
  });

  it.each(LAYERS)("src/%s imports only what its row allows", (layer) => {
    expect(violations(layer)).toEqual([]);
  });

  it("the shared modules import only each other and gen/", () => {
    const wrong = SHARED_FILES.filter((name) => name !== "gen").flatMap((name) =>
      [...importedBy(layerFiles(name), name)]
        .filter((top) => !SHARED_FILES.includes(top))
        .map((top) => `${name} → ${top}`),
    );
    expect(wrong).toEqual([]);
  });

  it("the code has no cycle between folders", () => {
    expect(cyclesOf(codeGraph())).toEqual([]);
  });

  it("the code has no cycle between modules, type-only imports included", () => {
    expect(cyclesOf(moduleGraph())).toEqual([]);
  });

  it("config imports from other folders only modules that import nothing of src/, so it stays at the bottom", () => {
    const imported = layerFiles(CONFIG).flatMap((file) =>
      importsOf(file)
        .filter((specifier) => topOf(file, specifier) === "market")
        .map((specifier) => path.resolve(path.dirname(file), specifier)),
    );
    expect(imported.length).toBeGreaterThan(0);
    for (const leaf of new Set(imported)) {
      expect(
        importsOf(leaf).filter((s) => s.startsWith(".")),
        path.relative(SRC, leaf),
      ).toEqual([]);
    }
  });

  it("market, engine, performance and db never import signals, web or server", () => {
    for (const folder of ["market", "engine", "db", "performance"]) {
      for (const forbidden of ["signals", "web", "server"]) expect(ALLOWED[folder]).not.toContain(forbidden);
    }
  });

  it("finds an upward import and a cycle when there is one (the checks themselves work)", () => {
    const file = path.join(SRC, "market", "example.ts");
    expect(topOf(file, "../signals/request.ts")).toBe("signals");
    expect(topOf(file, "../../gen/signals/v1/signals_pb.js")).toBe("gen");
    expect(topOf(file, "./feed.ts")).toBe("market");
    expect(topOf(file, "../config.ts")).toBe("config");
    expect(topOf(file, "../config/feeder.ts")).toBe("config");
    expect(mayImport("market", "signals")).toBe(false);
    expect(mayImport("market", "config")).toBe(false);
    expect(mayImport("billing", "config")).toBe(true);
    const graph = new Map([
      ["a", new Set(["b"])],
      ["b", new Set(["c"])],
      ["c", new Set(["a"])],
      ["d", new Set(["a"])],
    ]);
    expect(cyclesOf(graph)).toEqual(["a → b → c → a"]);
    expect(
      cyclesOf(
        new Map([
          ["a", new Set(["b"])],
          ["b", new Set<string>()],
        ]),
      ),
    ).toEqual([]);
  });
});
