/**
 * The REST JSON contract derived from the proto descriptors: every field present under its
 * proto name, in field order, with the JSON type the contract prescribes (int64 as a number,
 * enums as names, optional scalars and messages null when unset, lists as arrays), nested
 * messages checked the same way.
 */

import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { expect } from "vitest";
import { INTEGER_SCALARS } from "../../src/server/openapi.ts";
import { writtenOnlyWhenTrue } from "../../src/server/rest-json.ts";

/** The JSON types a field may take. */
export function jsonTypesOf(field: DescField): string[] {
  if (field.fieldKind === "list") return ["array"];
  if (field.fieldKind === "map") return ["object"];
  if (field.fieldKind === "message") return ["object", "null"];
  const nullable = field.proto.proto3Optional ? ["null"] : [];
  if (field.fieldKind === "enum") return ["string", ...nullable];
  if (field.scalar === ScalarType.STRING) return ["string", ...nullable];
  if (field.scalar === ScalarType.BOOL) return ["boolean", ...nullable];
  return ["number", ...nullable];
}

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/**
 * Asserts that `value` is the REST JSON of a message of `schema`; returns how many nulls it saw per path (coverage).
 */
export function expectProtoJson(
  value: unknown,
  schema: DescMessage,
  path = schema.name,
  seen: Map<string, Set<string>> = new Map(),
): Map<string, Set<string>> {
  expect(typeOf(value), path).toBe("object");
  const object = value as Record<string, unknown>;
  // A field written only when true (the `demo` marks) is absent when false, and true when present.
  const fields = schema.fields.filter((f) => !writtenOnlyWhenTrue(schema, f) || f.name in object);
  for (const f of fields) if (writtenOnlyWhenTrue(schema, f)) expect(object[f.name], `${path}.${f.name}`).toBe(true);
  expect(Object.keys(object), `${path}: field names and order`).toEqual(fields.map((f) => f.name));
  for (const field of fields) {
    const v = object[field.name];
    const where = `${path}.${field.name}`;
    expect(jsonTypesOf(field), `${where} is ${typeOf(v)}`).toContain(typeOf(v));
    const kinds = seen.get(`${schema.name}.${field.name}`) ?? new Set<string>();
    kinds.add(typeOf(v));
    seen.set(`${schema.name}.${field.name}`, kinds);
    if (field.fieldKind === "scalar" && INTEGER_SCALARS.has(field.scalar) && typeof v === "number")
      expect(Number.isInteger(v), `${where} is an integer`).toBe(true);
    if (field.fieldKind === "message" && v !== null) expectProtoJson(v, field.message, where, seen);
    if (field.fieldKind === "list") {
      (v as unknown[]).forEach((item, i) => {
        if (field.listKind === "message") expectProtoJson(item, field.message, `${where}[${i}]`, seen);
        else if (field.listKind === "enum") expect(typeof item, `${where}[${i}]`).toBe("string");
        else
          expect(typeOf(item), `${where}[${i}]`).toBe(
            field.scalar === ScalarType.STRING ? "string" : field.scalar === ScalarType.BOOL ? "boolean" : "number",
          );
      });
    }
  }
  return seen;
}

/** Every JSON object key in a value, recursively. */
export function jsonKeys(value: unknown, into: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) for (const v of value) jsonKeys(v, into);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      jsonKeys(v, into);
    }
  }
  return into;
}
