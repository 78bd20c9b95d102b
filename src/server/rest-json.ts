/**
 * The REST JSON of any response message, derived from its descriptor (the rules are in
 * docs/decisions.md, "REST JSON"): every
 * field under its proto name in field order, int64 as a JSON number, an enum as its value's
 * name without the enum's prefix (`SIGNAL_STRONG_LONG` → "STRONG_LONG"), an unset optional
 * scalar or message as null (never omitted), lists as arrays. Canonical proto3 JSON would send
 * int64 as strings and omit unset fields, which the contract does not allow.
 *
 * One documented exception: a signal entry with ok:false is reduced to symbol, tf, ok and
 * reason, and an ok entry has no reason (see OK_DEPENDENT and SELECTIONS).
 */
import { type DescEnum, type DescField, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { MoverSchema } from "../../gen/signals/v1/market_data_pb.js";
import { SignalEntrySchema } from "../../gen/signals/v1/signals_pb.js";

type Json = unknown;
type Mapper = (message: Message) => Record<string, Json>;

/**
 * The contract's one exception to "every field": a message whose written fields (proto names)
 * depend on its `ok` field. The OpenAPI document describes it from the same table.
 */
export interface OkDependentFields {
  /** Written when ok is true. */
  readonly ok: readonly string[];
  /** Written when ok is false. */
  readonly notOk: readonly string[];
}

const OK_DEPENDENT = new Map<string, OkDependentFields>([
  [
    SignalEntrySchema.typeName,
    {
      ok: SignalEntrySchema.fields.map((f) => f.name).filter((name) => name !== "reason"),
      notOk: ["symbol", "tf", "ok", "reason"],
    },
  ],
]);

/** The ok-dependent field lists of a message type, or undefined when every field is written. */
export function okDependentFields(schema: DescMessage): OkDependentFields | undefined {
  return OK_DEPENDENT.get(schema.typeName);
}

/**
 * Boolean fields written only when true: the `demo` marks added to the contract's messages,
 * so an answer from real data stays exactly the contract's. The OpenAPI
 * document lists them as optional.
 */
const ONLY_WHEN_TRUE = new Set([`${SignalEntrySchema.typeName}.demo`, `${MoverSchema.typeName}.demo`]);

/** Whether REST writes this field only when it is true (else it is left out). */
export function writtenOnlyWhenTrue(message: DescMessage, field: DescField): boolean {
  return ONLY_WHEN_TRUE.has(`${message.typeName}.${field.name}`);
}

/** Which fields (proto names) of a message are written; the contract's exceptions only. */
const SELECTIONS = new Map<string, (message: Message) => readonly string[]>(
  [...OK_DEPENDENT].map(([typeName, lists]) => [
    typeName,
    (m: Message) => ((m as unknown as { ok: boolean }).ok ? lists.ok : lists.notOk),
  ]),
);

const INT64_SCALARS = new Set([
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

/** A value's REST name: its proto name without the enum's shared prefix (`SIGNAL_STRONG_LONG` → "STRONG_LONG"). */
function restEnumName(desc: DescEnum, name: string): string {
  return name.slice((desc.sharedPrefix ?? "").length);
}

/** The names REST writes for an enum, in declaration order (never the zero UNSPECIFIED value). */
export function restEnumValues(desc: DescEnum): string[] {
  return desc.values.filter((v) => v.number !== 0).map((v) => restEnumName(desc, v.name));
}

/**
 * An enum value's REST name. The zero value (UNSPECIFIED, which the services never set) and
 * unknown numbers are written as the first real value (for Signal: NONE), so a reader never
 * sees a name outside the contract.
 */
function enumJson(desc: DescEnum): (value: number) => string {
  const names = new Map(desc.values.map((v) => [v.number, restEnumName(desc, v.name)]));
  const fallback = restEnumValues(desc)[0] ?? "";
  return (value) => (value === 0 ? fallback : (names.get(value) ?? fallback));
}

function scalarJson(scalar: ScalarType): (value: unknown) => Json {
  if (INT64_SCALARS.has(scalar)) return (v) => Number(v);
  if (scalar === ScalarType.BYTES) return (v) => Buffer.from(v as Uint8Array).toString("base64");
  return (v) => v;
}

/** The mapper of a nested message type, looked up on first use (types may be recursive). */
function lazyMapper(schema: DescMessage): (value: unknown) => Json {
  let mapper: Mapper | undefined;
  return (v) => (mapper ??= restJsonMapper(schema))(v as Message);
}

/** How one field's value becomes JSON. */
function fieldJson(field: DescField): (value: unknown) => Json {
  switch (field.fieldKind) {
    case "message": {
      const toJson = lazyMapper(field.message);
      return (v) => (v === undefined ? null : toJson(v));
    }
    case "enum": {
      const toName = enumJson(field.enum);
      return (v) => (v === undefined ? null : toName(v as number));
    }
    case "scalar": {
      const toJson = scalarJson(field.scalar);
      return (v) => (v === undefined ? null : toJson(v));
    }
    case "list": {
      const item =
        field.listKind === "message"
          ? lazyMapper(field.message)
          : field.listKind === "enum"
            ? enumJson(field.enum)
            : scalarJson(field.scalar);
      return (v) => (v as unknown[]).map((x) => item(x as never));
    }
    case "map": {
      const value =
        field.mapKind === "message"
          ? lazyMapper(field.message)
          : field.mapKind === "enum"
            ? enumJson(field.enum)
            : scalarJson(field.scalar);
      return (v) =>
        Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, value(x as never)]));
    }
  }
}

/** How a field's value is read from a message (a oneof member only when it is the chosen case). */
function fieldReader(field: DescField): (m: Message) => unknown {
  const oneof = field.oneof;
  return oneof
    ? (m) => {
        const chosen = (m as unknown as Record<string, { case?: string; value?: unknown }>)[oneof.localName];
        return chosen?.case === field.localName ? chosen.value : undefined;
      }
    : (m) => (m as unknown as Record<string, unknown>)[field.localName];
}

interface FieldOut<T> {
  readonly name: string;
  readonly onlyWhenTrue: boolean;
  readonly read: (m: Message) => unknown;
  readonly out: T;
}

/**
 * The fields a message of `schema` writes, in order, each with `out(field)` built once: every
 * field, or, for the contract's exceptions, the constant list its selection picks.
 */
function fieldsWritten<T>(schema: DescMessage, out: (field: DescField) => T): (m: Message) => readonly FieldOut<T>[] {
  const fields = schema.fields.map((field) => ({
    name: field.name,
    onlyWhenTrue: writtenOnlyWhenTrue(schema, field),
    read: fieldReader(field),
    out: out(field),
  }));
  const select = SELECTIONS.get(schema.typeName);
  if (!select) return () => fields;
  const byName = new Map(fields.map((f) => [f.name, f]));
  // A selection returns one of a few constant name lists; their fields are looked up once.
  const selected = new WeakMap<readonly string[], FieldOut<T>[]>();
  return (m) => {
    const names = select(m);
    let list = selected.get(names);
    if (!list) selected.set(names, (list = names.map((name) => byName.get(name)!)));
    return list;
  };
}

const mappers = new WeakMap<DescMessage, Mapper>();

/** The REST JSON mapper of a message type, built once per type from its descriptor. */
export function restJsonMapper(schema: DescMessage): Mapper {
  const known = mappers.get(schema);
  if (known) return known;
  const fieldsOf = fieldsWritten(schema, fieldJson);
  const mapper: Mapper = (m) => {
    const out: Record<string, Json> = {};
    for (const f of fieldsOf(m)) {
      const value = f.out(f.read(m));
      if (f.onlyWhenTrue && value !== true) continue;
      out[f.name] = value;
    }
    return out;
  };
  mappers.set(schema, mapper);
  return mapper;
}

type Writer = (message: Message) => string;

/** A number's JSON text (JSON writes NaN and the infinities as null). */
const numberText = (n: number): string => (Number.isFinite(n) ? String(n) : "null");

/** Characters a JSON string must escape (lone surrogates included): most strings have none. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string's JSON text; JSON.stringify only when a character needs escaping. */
const stringText = (s: string): string => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`);

/** A scalar's JSON text: exactly what JSON.stringify writes for the mapper's value. */
function scalarText(scalar: ScalarType): (value: unknown) => string {
  if (INT64_SCALARS.has(scalar)) return (v) => numberText(Number(v));
  switch (scalar) {
    case ScalarType.BYTES:
      return (v) => `"${Buffer.from(v as Uint8Array).toString("base64")}"`;
    case ScalarType.STRING:
      return (v) => stringText(v as string);
    case ScalarType.BOOL:
      return (v) => (v ? "true" : "false");
    default:
      return (v) => numberText(v as number);
  }
}

/** An enum value's JSON text (the names quoted once, when the writer is built). */
function enumText(desc: DescEnum): (value: number) => string {
  const toName = enumJson(desc);
  const texts = new Map(desc.values.map((v) => [v.number, JSON.stringify(toName(v.number))]));
  const fallback = JSON.stringify(toName(0));
  return (value) => texts.get(value) ?? fallback;
}

/** The writer of a nested message type, looked up on first use (types may be recursive). */
function lazyWriter(schema: DescMessage): (value: unknown) => string {
  let writer: Writer | undefined;
  return (v) => (writer ??= restJsonWriter(schema))(v as Message);
}

/** How one field's value becomes JSON text: the text of what fieldJson maps it to. */
function fieldText(field: DescField): (value: unknown) => string {
  switch (field.fieldKind) {
    case "message": {
      const toText = lazyWriter(field.message);
      return (v) => (v === undefined ? "null" : toText(v));
    }
    case "enum": {
      const toText = enumText(field.enum);
      return (v) => (v === undefined ? "null" : toText(v as number));
    }
    case "scalar": {
      const toText = scalarText(field.scalar);
      return (v) => (v === undefined ? "null" : toText(v));
    }
    case "list": {
      const item =
        field.listKind === "message"
          ? lazyWriter(field.message)
          : field.listKind === "enum"
            ? enumText(field.enum)
            : scalarText(field.scalar);
      return (v) => {
        const list = v as unknown[];
        let text = "[";
        for (let i = 0; i < list.length; i++) text += (i === 0 ? "" : ",") + item(list[i] as never);
        return `${text}]`;
      };
    }
    case "map": {
      // Rare in answers: the mapped object's own text (its key order is JSON.stringify's).
      const toJson = fieldJson(field);
      return (v) => JSON.stringify(toJson(v));
    }
  }
}

const writers = new WeakMap<DescMessage, Writer>();

/**
 * The text of deeply frozen messages, which cannot change: an answer may share them with others
 * (the signal entries of a reading, built once), and each is then written once, not per answer.
 * A freeze is shallow, so a frozen message is cached only when everything it holds is frozen too:
 * a nested message or list that can still change would otherwise be answered with stale text.
 */
const frozenTexts = new WeakMap<Message, string>();

function deeplyFrozen(value: object): boolean {
  if (!Object.isFrozen(value)) return false;
  for (const inner of Object.values(value))
    if (typeof inner === "object" && inner !== null && !deeplyFrozen(inner)) return false;
  return true;
}

/**
 * The REST JSON text of a message type, built once per type from its descriptor: the same text
 * as `JSON.stringify(restJsonMapper(schema)(m))`, written straight from the message without the
 * intermediate object (an answer's objects were a share of each call's garbage).
 */
export function restJsonWriter(schema: DescMessage): Writer {
  const known = writers.get(schema);
  if (known) return known;
  const fieldsOf = fieldsWritten(schema, (field) => ({
    key: `${JSON.stringify(field.name)}:`,
    text: fieldText(field),
  }));
  const write: Writer = (m) => {
    let text = "";
    for (const f of fieldsOf(m)) {
      const value = f.read(m);
      if (f.onlyWhenTrue && value !== true) continue;
      text += (text === "" ? "{" : ",") + f.out.key + f.out.text(value);
    }
    return text === "" ? "{}" : `${text}}`;
  };
  const writer: Writer = (m) => {
    if (!Object.isFrozen(m)) return write(m);
    let text = frozenTexts.get(m);
    if (text !== undefined) return text;
    text = write(m);
    // Frozen for good once deeply frozen: checked once, on the first write.
    if (deeplyFrozen(m)) frozenTexts.set(m, text);
    return text;
  };
  writers.set(schema, writer);
  return writer;
}

/** The REST JSON of a message of `schema`. */
export function toRestJson(schema: DescMessage, message: Message): Record<string, Json> {
  return restJsonMapper(schema)(message);
}
