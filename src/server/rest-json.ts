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

const mappers = new WeakMap<DescMessage, Mapper>();

/** The REST JSON mapper of a message type, built once per type from its descriptor. */
export function restJsonMapper(schema: DescMessage): Mapper {
  const known = mappers.get(schema);
  if (known) return known;
  const fields = schema.fields.map((field) => {
    const toJson = fieldJson(field);
    const oneof = field.oneof;
    const read = oneof
      ? (m: Message) => {
          const chosen = (m as unknown as Record<string, { case?: string; value?: unknown }>)[oneof.localName];
          return chosen?.case === field.localName ? chosen.value : undefined;
        }
      : (m: Message) => (m as unknown as Record<string, unknown>)[field.localName];
    return {
      name: field.name,
      onlyWhenTrue: writtenOnlyWhenTrue(schema, field),
      write: (m: Message) => toJson(read(m)),
    };
  });
  const byName = new Map(fields.map((f) => [f.name, f]));
  const select = SELECTIONS.get(schema.typeName);
  // A selection returns one of a few constant name lists; their writers are looked up once.
  const selected = new WeakMap<readonly string[], typeof fields>();
  const fieldsOf = (names: readonly string[]) => {
    let list = selected.get(names);
    if (!list) selected.set(names, (list = names.map((name) => byName.get(name)!)));
    return list;
  };
  const mapper: Mapper = (m) => {
    const out: Record<string, Json> = {};
    for (const f of select ? fieldsOf(select(m)) : fields) {
      const value = f.write(m);
      if (f.onlyWhenTrue && value !== true) continue;
      out[f.name] = value;
    }
    return out;
  };
  mappers.set(schema, mapper);
  return mapper;
}

/** The REST JSON of a message of `schema`. */
export function toRestJson(schema: DescMessage, message: Message): Record<string, Json> {
  return restJsonMapper(schema)(message);
}
