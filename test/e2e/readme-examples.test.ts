/**
 * The README's client examples are copy-paste correct: the TypeScript block (connect-es over
 * gRPC) is extracted from README.md, saved in the project root as the README says, and run with
 * Node against a real server; the Python block (requests) is compiled by python3, its URLs and
 * parameters are checked against the OpenAPI document, and it is run when `requests` is
 * installed.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../support/openapi-contract.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const README = readFileSync(path.join(ROOT, "README.md"), "utf8");
const NODE = path.join(ROOT, "node_modules/.bin/node");

/** The fenced blocks of a language in the README. */
function blocks(lang: string): string[] {
  return [...README.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => m[1]!);
}

const tsExample = blocks("ts").find((b) => b.includes("createClient(") && b.includes("UsageService"));
const pyExample = blocks("python").find((b) => b.includes("import requests"));
const pythonHasRequests = await run("python3", ["-c", "import requests"]).then(
  () => true,
  () => false,
);

let server: TestServer;
let apiKey: string;
beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey } = await server.account());
});
afterAll(() => server?.close());

describe("README examples", () => {
  it("the TypeScript client runs against a real server: one charged call, then the free usage read", async () => {
    expect(tsExample).toBeDefined();
    const file = path.join(ROOT, `.readme-client-${process.pid}.ts`);
    writeFileSync(file, tsExample!);
    try {
      const { stdout } = await run(NODE, [file], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", KEY: apiKey, SIGNALS_URL: server.baseUrl },
        timeout: 30_000,
      });
      const [first = "", second = ""] = stdout.trim().split("\n");
      // 10,000 granted, one call charged; the test server's snapshot is empty (no_data).
      expect(first).toBe(`9999 [ [ 'BTC', 'no_data' ], [ 'ETH', 'no_data' ] ]`);
      expect(second).toBe(`9999 1 2026-11-16T00:00:00+08:00`);
    } finally {
      rmSync(file, { force: true });
    }
  });

  it("the Python client compiles, and calls only documented paths with documented parameters", async () => {
    expect(pyExample).toBeDefined();
    const dir = mkdtempSync(path.join(tmpdir(), "readme-py-"));
    try {
      const file = path.join(dir, "client.py");
      writeFileSync(file, pyExample!);
      await run("python3", ["-m", "py_compile", file]);
      const doc = openApiDocument();
      const calls = [...pyExample!.matchAll(/requests\.get\(f"\{BASE\}([^"]+)"(?:, params=\{([^}]*)\})?/g)];
      expect(calls.length).toBeGreaterThanOrEqual(2);
      for (const [, route, params] of calls) {
        const op = doc.paths[route!]?.get;
        expect(op, route).toBeDefined();
        const documented = new Set(
          op.parameters.filter((p: { in: string }) => p.in === "query").map((p: { name: string }) => p.name),
        );
        for (const [, name] of (params ?? "").matchAll(/"(\w+)":/g))
          expect(documented.has(name), `${route} ${name}`).toBe(true);
      }
      expect(pyExample).toContain('{"x-api-key": os.environ["KEY"]}');
      if (pythonHasRequests) {
        const { stdout } = await run("python3", [file], {
          env: { PATH: process.env.PATH ?? "", KEY: apiKey, SIGNALS_URL: server.baseUrl },
          timeout: 30_000,
        });
        expect(stdout.trim().split("\n")).toEqual([
          "BTC no_data",
          "ETH no_data",
          "9998 9998 2 2026-11-16T00:00:00+08:00",
        ]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
