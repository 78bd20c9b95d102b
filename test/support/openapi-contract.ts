/**
 * Validates REST answers against the OpenAPI document the server publishes (built here from the
 * same descriptors): the status must be documented for the operation, the body must match its
 * schema (JSON Schema 2020-12, Ajv), required headers must be present. Contract tests call
 * `expectMatchesOpenApi` on every REST answer they receive, so the document cannot drift from
 * the behaviour.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "vitest";
import { publicOpenApiDocument } from "../../src/server/public-api.ts";

type Json = Record<string, any>;
const DOC_ID = "https://signals.test/openapi.json";

let state: { doc: Json; ajv: Ajv2020 } | null = null;

/** The document (server URL aside, the one every server publishes). */
export function openApiDocument(): Json {
  return load().doc;
}

function load() {
  if (state) return state;
  const doc = publicOpenApiDocument("http://127.0.0.1:8080") as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema(doc, DOC_ID);
  state = { doc, ajv };
  return state;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

export interface RestAnswer {
  readonly status: number | null;
  readonly headers: Headers | Record<string, string>;
  /** Parsed JSON body (or the raw text). */
  readonly body: unknown;
}

/** Statuses seen per "METHOD path" (the walk test checks they cover the document). */
export const seenStatuses = new Map<string, Set<number>>();

/**
 * Asserts that `answer` (to `method` on `url`) is what the document says: for a documented path,
 * the operation's response for that status (a method the path does not have: its 405); for any
 * other path, the ErrorBody schema.
 */
export function expectMatchesOpenApi(method: string, url: string, answer: RestAnswer): void {
  const { doc, ajv } = load();
  const path = new URL(url, "http://x").pathname;
  const status = answer.status;
  expect(status, `${method} ${path}: no status`).not.toBeNull();
  const get = (name: string) =>
    answer.headers instanceof Headers ? answer.headers.get(name) : (answer.headers[name.toLowerCase()] ?? null);
  expect(get("content-type"), `${method} ${path} ${status}: content-type`).toMatch(/^application\/json/);
  const item = doc.paths[path] as Json | undefined;
  let schemaRef: string;
  if (!item) {
    expect(status, `${method} ${path}: an undocumented path only ever answers an error`).toBeGreaterThanOrEqual(400);
    schemaRef = `${DOC_ID}#/components/schemas/ErrorBody`;
  } else {
    const verb = item[method.toLowerCase()] ? method.toLowerCase() : Object.keys(item)[0]!;
    const response = item[verb].responses[String(status)] as Json | undefined;
    expect(response, `${method} ${path}: status ${status} is not documented`).toBeDefined();
    if (!item[method.toLowerCase()]) expect(status, `${method} ${path}: a method the path does not have`).toBe(405);
    for (const [name, h] of Object.entries((response!.headers ?? {}) as Json)) {
      if (h.required) expect(get(name), `${method} ${path} ${status}: header ${name}`).not.toBeNull();
      if (h.required && h.schema?.type === "integer")
        expect(get(name), `${method} ${path} ${status}: header ${name}`).toMatch(/^\d+$/);
    }
    const key = `${verb.toUpperCase()} ${path}`;
    const seen = seenStatuses.get(key) ?? new Set<number>();
    seen.add(status!);
    seenStatuses.set(key, seen);
    const pointed = pointer("paths", path, verb, "responses", String(status), "content", "application/json", "schema");
    schemaRef = `${DOC_ID}#/${pointed}`;
  }
  const validate = ajv.getSchema(schemaRef);
  expect(validate, schemaRef).toBeDefined();
  const ok = validate!(answer.body);
  expect(
    ok,
    `${method} ${path} ${status}: ${JSON.stringify(validate!.errors?.slice(0, 3))} ` +
      `in ${JSON.stringify(answer.body).slice(0, 300)}`,
  ).toBe(true);
}
