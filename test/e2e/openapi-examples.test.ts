/**
 * The OpenAPI document's examples are real answers: every operation has one for every status it
 * documents (one per error code), each valid against its response schema, and recording them
 * again from a real server (docs/openapi-examples.ts, on the shared real candles) gives exactly
 * the committed src/server/openapi-examples.json, so they cannot drift. The README's sample
 * answer of the paid endpoint is that recorded answer. The proto comments' error tables reach
 * the document as Markdown tables.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { EXAMPLES_FILE, examplesFileText, recordOpenApiExamples } from "../../docs/openapi-examples.ts";
import { ERROR_TABLES } from "../../src/server/openapi.ts";
import { renderErrorTables } from "../../src/server/proto-comments.ts";
import { openApiDocument } from "../support/openapi-contract.ts";
import { PROJECT_ROOT } from "../support/processes.ts";
import { realCandlesAvailable } from "../support/real-candles.ts";

type Json = Record<string, any>;
const kindOf = (p: string) => (p === "/api/v1/signals" ? "paid" : p === "/api/v1/usage" ? "usage" : "free");

describe("the OpenAPI examples", () => {
  it("cover every status of every operation, one per error code, and each is valid against its schema", () => {
    const doc = openApiDocument();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc, "doc");
    for (const [p, item] of Object.entries(doc.paths as Json)) {
      const responses = item.get.responses as Json;
      const tables = ERROR_TABLES[kindOf(p)];
      expect(Object.keys(responses).sort(), p).toEqual(["200", ...Object.keys(tables)].sort());
      for (const [status, response] of Object.entries(responses)) {
        const examples = response.content["application/json"].examples as Json | undefined;
        expect(examples, `${p} ${status}`).toBeDefined();
        expect(Object.keys(examples!).sort(), `${p} ${status}`).toEqual(
          status === "200" ? ["ok"] : [...tables[Number(status)]!].sort(),
        );
        const validate = ajv.getSchema(
          `doc#/paths/${p.replace(/\//g, "~1")}/get/responses/${status}/content/application~1json/schema`,
        )!;
        for (const [name, example] of Object.entries(examples!)) {
          expect(validate(example.value), `${p} ${status} ${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
          if (status !== "200") expect(example.value.error, `${p} ${status}`).toBe(name);
        }
      }
    }
    // Real values, not a schema's placeholders.
    const ok = doc.paths["/api/v1/signals"].get.responses["200"].content["application/json"].examples.ok.value;
    expect(ok.ts).toBeGreaterThan(1.7e12);
    expect(ok.signals[0]).toMatchObject({ symbol: "BTC", tf: "1h", ok: true });
    expect(ok.signals[0].price).toBeGreaterThan(1000);
  });

  it("the README's sample answer of GET /api/v1/signals is the recorded answer", () => {
    const readme = readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
    const url = String.raw`http:\/\/127\.0\.0\.1:8080\/api\/v1\/signals\?symbols=BTC,ETH&tf=1h`;
    const curl = String.raw`curl -s -H "x-api-key: \$KEY" '${url}'`;
    const sample = new RegExp(`\`\`\`sh\\n${curl}\\n\`\`\`\\n\\n\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(readme);
    expect(sample, "the README's curl example followed by its answer").not.toBeNull();
    const recorded = JSON.parse(readFileSync(EXAMPLES_FILE, "utf8"))["/api/v1/signals"]["200"].ok.value;
    expect(JSON.parse(sample![1]!)).toEqual(recorded);
  });

  it.runIf(realCandlesAvailable)(
    "recorded again from a real server, they are exactly the committed file (npm run docs:examples)",
    async () => {
      expect(examplesFileText(await recordOpenApiExamples())).toBe(readFileSync(EXAMPLES_FILE, "utf8"));
    },
    180_000,
  );
});

describe("the proto comments' error tables", () => {
  it("become Markdown tables, continuation lines joined to their row", () => {
    const lines = [
      "Errors, in the order they are checked:",
      "  401 api_key_required      UNAUTHENTICATED     no key sent",
      "  400 bad_request           INVALID_ARGUMENT    a filter value (such a",
      "                                                call counts)",
      "After.",
    ];
    expect(renderErrorTables(lines)).toEqual([
      "Errors, in the order they are checked:",
      "",
      "| HTTP | code | gRPC / Connect | when |",
      "| --- | --- | --- | --- |",
      "| 401 | `api_key_required` | `UNAUTHENTICATED` | no key sent |",
      "| 400 | `bad_request` | `INVALID_ARGUMENT` | a filter value (such a call counts) |",
      "",
      "After.",
    ]);
    const doc = openApiDocument();
    const tag = (doc.tags as Json[]).find((t) => t.name === "SignalsService")!;
    expect(tag.description).toContain(
      "| 402 | `insufficient_credits` | `RESOURCE_EXHAUSTED` | no Tokens left in grant or packs |",
    );
  });
});
