/**
 * The REST answer's JSON text is written straight from the message (restJsonWriter); it must be
 * byte for byte the text of the mapped object (JSON.stringify of restJsonMapper's result), which
 * the contract tests and the OpenAPI document describe. Differential: random messages of every
 * public REST route's answer type, every field set or left unset, through both.
 */
import { create, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ArmingSchema, SignalEntrySchema } from "../../../gen/signals/v1/signals_pb.js";
import { PUBLIC_REST_SERVICES } from "../../../src/server/public-api.ts";
import { httpRouteOf } from "../../../src/server/rest.ts";
import { restJsonMapper, restJsonWriter } from "../../../src/server/rest-json.ts";

/** A small seeded generator (mulberry32), so a failure is reproducible. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ["", "BTC", "1h", 'quote " and \\ backslash', "line\nbreak\u0001", "ünïcödé ✓ 🚀", "\ud800 lone"];
const DOUBLES = [0, -0, 1.5, -2.25e-7, 1e21, 123456.789, Number.NaN, Number.POSITIVE_INFINITY];

function scalarValue(scalar: ScalarType, rnd: () => number): unknown {
  const pick = <T>(list: readonly T[]) => list[Math.floor(rnd() * list.length)]!;
  switch (scalar) {
    case ScalarType.STRING:
      return pick(STRINGS);
    case ScalarType.BOOL:
      return rnd() < 0.5;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return pick(DOUBLES);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick([0n, -1n, 1_700_000_000_000n, -(2n ** 63n)]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick([0n, 1n, 1_700_000_000_000n, 2n ** 64n - 1n]);
    case ScalarType.BYTES:
      return new Uint8Array([0, 255, Math.floor(rnd() * 256)]);
    default:
      return Math.floor((rnd() - 0.5) * 2 ** 31);
  }
}

function fieldValue(field: DescField, rnd: () => number, depth: number): unknown {
  switch (field.fieldKind) {
    case "scalar":
      return scalarValue(field.scalar, rnd);
    case "enum": {
      // The zero value and an unknown number too: both are written as the first real name.
      const numbers = [...field.enum.values.map((v) => v.number), 99];
      return numbers[Math.floor(rnd() * numbers.length)];
    }
    case "message":
      return fill(field.message, rnd, depth + 1);
    case "list": {
      const length = Math.floor(rnd() * 4);
      return Array.from({ length }, () =>
        field.listKind === "message"
          ? fill(field.message, rnd, depth + 1)
          : field.listKind === "enum"
            ? field.enum.values[Math.floor(rnd() * field.enum.values.length)]!.number
            : scalarValue(field.scalar, rnd),
      );
    }
    case "map":
      return {};
  }
}

/** A message of `schema` with each field set at random (or left unset, where it can be). */
function fill(schema: DescMessage, rnd: () => number, depth = 0): Message {
  const init: Record<string, unknown> = {};
  for (const field of schema.fields) {
    if (depth > 4 || rnd() < 0.2) continue;
    const value = fieldValue(field, rnd, depth);
    if (field.oneof) init[field.oneof.localName] = { case: field.localName, value };
    else init[field.localName] = value;
  }
  return create(schema, init as never);
}

/** Freezes the message and nested messages at random, innermost first (as shared entries are). */
function freezeSome(message: Message, rnd: () => number): Message {
  for (const value of Object.values(message)) {
    const items: unknown[] = Array.isArray(value) ? value : [value];
    for (const item of items) if (isMessageValue(item)) freezeSome(item, rnd);
  }
  return rnd() < 0.5 ? Object.freeze(message) : message;
}

const isMessageValue = (v: unknown): v is Message =>
  typeof v === "object" && v !== null && typeof (v as { $typeName?: unknown }).$typeName === "string";

const answerTypes = new Map<string, DescMessage>();
for (const { service } of PUBLIC_REST_SERVICES) {
  for (const method of service.methods) if (httpRouteOf(method)) answerTypes.set(method.output.typeName, method.output);
}

describe("REST JSON written straight from the message", () => {
  it("covers every public REST answer type, the signal list among them", () => {
    expect(answerTypes.size).toBeGreaterThanOrEqual(5);
    expect([...answerTypes.values()].some((s) => s.fields.some((f) => f.message === SignalEntrySchema))).toBe(true);
  });

  for (const schema of answerTypes.values()) {
    it(`${schema.name}: the same text as JSON.stringify of the mapped object`, () => {
      const rnd = random(schema.typeName.length * 7919);
      const toObject = restJsonMapper(schema);
      const toText = restJsonWriter(schema);
      for (let i = 0; i < 300; i++) {
        const message = fill(schema, rnd);
        expect(toText(message)).toBe(JSON.stringify(toObject(message)));
      }
    });
  }

  it("frozen messages (their text kept after the first write) give the same text, every time", () => {
    for (const schema of answerTypes.values()) {
      const rnd = random(schema.typeName.length * 104_729);
      const toObject = restJsonMapper(schema);
      const toText = restJsonWriter(schema);
      for (let i = 0; i < 100; i++) {
        const message = freezeSome(fill(schema, rnd), rnd);
        const first = toText(message);
        expect(first).toBe(JSON.stringify(toObject(message)));
        expect(toText(message)).toBe(first);
      }
    }
  });

  it("a frozen message holding a message or a list that can still change is written anew each time", () => {
    const arming = create(ArmingSchema, { dir: 1, score: 3, trigger: 100, invalidation: 90 });
    const entry = Object.freeze(create(SignalEntrySchema, { symbol: "BTC", tf: "1h", ok: true, arming }));
    const toText = restJsonWriter(SignalEntrySchema);
    expect(JSON.parse(toText(entry)).arming.score).toBe(3);
    arming.score = 7;
    expect(JSON.parse(toText(entry)).arming.score).toBe(7);
    expect(toText(entry)).toBe(JSON.stringify(restJsonMapper(SignalEntrySchema)(entry)));
  });

  it("an entry with ok:false keeps its four fields in order, demo left out", () => {
    const entry = create(SignalEntrySchema, { symbol: "BTC", tf: "1h", ok: false, reason: "stale", demo: true });
    const text = restJsonWriter(SignalEntrySchema)(entry);
    expect(Object.keys(JSON.parse(text))).toEqual(["symbol", "tf", "ok", "reason"]);
    expect(text).toBe(JSON.stringify(restJsonMapper(SignalEntrySchema)(entry)));
  });
});
