/**
 * The OpenAPI 3.1 document of the public REST API, generated from the proto descriptors when
 * the server starts, so it cannot drift from what is served:
 *  - paths and verbs from each method's `google.api.http` annotation;
 *  - query parameters from the request message's fields (strings on every protocol);
 *  - response schemas from the response messages with the REST JSON rules of rest-json.ts
 *    (its enum names and its ok-dependent field lists are reused here): proto field names,
 *    every field present, int64 as a JSON number (integer), enums as their value names without
 *    the type prefix (the zero UNSPECIFIED value is never sent), optional scalars and messages
 *    null when unset, repeated fields as arrays; the single exception is SignalEntry, which is
 *    either a full reading (ok: true, no reason) or the reduced {symbol, tf, ok: false, reason};
 *  - errors: the ErrorBody message with `error` as the enum of every code in src/errors.ts, and
 *    per operation each status it can answer with the codes that status carries;
 *  - the `x-api-key` security scheme and the RateLimit-*, Retry-After, Idempotency-Key,
 *    Idempotent-Replayed, X-Signals-Warnings and X-Request-Id headers;
 *  - descriptions from the .proto comments (when proto/ is present), code samples, and for
 *    every status real answers recorded from a server (docs/openapi-examples.ts).
 */
import { type DescField, type DescMessage, type DescMethod, type DescService, ScalarType } from "@bufbuild/protobuf";
import { ErrorBodySchema } from "../../gen/signals/v1/errors_pb.js";
import { API_KEY_PATTERN } from "../accounts/api-key.ts";
import { ERROR_CODES, type ErrorCode, errorSpec } from "../errors.ts";
import { httpRouteOf } from "./rest.ts";
import { okDependentFields, restEnumValues, writtenOnlyWhenTrue } from "./rest-json.ts";

type Json = Record<string, unknown>;

/** Which error table an operation has: the paid endpoint, the free data endpoints, the usage read. */
export type OperationKind = "paid" | "free" | "usage";

export interface OpenApiInput {
  readonly services: ReadonlyArray<{ readonly service: DescService; readonly kind: OperationKind }>;
  /** Base URL callers use (PUBLIC_BASE_URL). */
  readonly serverUrl: string;
  /** Leading comments of the .proto files (proto-comments.ts); may be empty. */
  readonly comments?: ReadonlyMap<string, string>;
  /** The .proto files offered for download under /docs/proto/ (public-api.ts). */
  readonly protoFiles?: readonly string[];
  /** Real answers per path, status and name (the error code, or "ok"), recorded by docs/openapi-examples.ts. */
  readonly examples?: OpenApiExamples;
}

/** Examples by path, then status ("200", "401" …), then name ("ok" or the error code). */
export type OpenApiExamples = Record<string, Record<string, Record<string, { summary: string; value: unknown }>>>;

/** The protobuf scalars whose JSON form is a whole number (OpenAPI "integer"). */
export const INTEGER_SCALARS: ReadonlySet<ScalarType> = new Set([
  ScalarType.INT32,
  ScalarType.INT64,
  ScalarType.UINT32,
  ScalarType.UINT64,
  ScalarType.SINT32,
  ScalarType.SINT64,
  ScalarType.FIXED32,
  ScalarType.FIXED64,
  ScalarType.SFIXED32,
  ScalarType.SFIXED64,
]);

/** Error codes each status carries, per kind of operation (in the order they are checked). */
const KEY_ERRORS: Record<number, ErrorCode[]> = { 401: ["api_key_required", "invalid_api_key"] };
const KEY_FORMAT = "`sig_live_` + 30 random base62 characters + a 6-character base62 CRC-32 checksum";
const LEGACY_KEYS = "keys issued before the checksum (`sig_live_` + 32 base62) keep working until regenerated.";
const PROTOCOL_ERRORS: Record<number, ErrorCode[]> = {
  400: ["bad_request"],
  405: ["method_not_allowed"],
  408: ["request_timeout"],
  413: ["payload_too_large"],
  414: ["uri_too_long"],
  431: ["headers_too_large"],
  503: ["unavailable"],
};
export const ERROR_TABLES: Record<OperationKind, Record<number, ErrorCode[]>> = {
  paid: {
    ...KEY_ERRORS,
    403: ["node_tier_required", "subscription_inactive"],
    402: ["insufficient_credits"],
    429: ["rate_limited"],
    400: ["bad_request"],
    422: ["idempotency_key_reused"],
    ...PROTOCOL_ERRORS,
  },
  free: {
    ...KEY_ERRORS,
    403: ["subscription_inactive"],
    429: ["rate_limited"],
    400: ["bad_request"],
    ...PROTOCOL_ERRORS,
  },
  usage: { ...KEY_ERRORS, 403: ["subscription_inactive"], 429: ["rate_limited"], ...PROTOCOL_ERRORS },
};

/** The `reason` values of a reduced (ok:false) entry, per message type. */
const NOT_OK_REASONS: Record<string, string[]> = {
  "signals.v1.SignalEntry": ["unknown_symbol", "no_data", "stale", "invalid_symbol"],
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: Json): Json => ({ oneOf: [schema, { type: "null" }] });

function scalarSchema(scalar: ScalarType): Json {
  if (scalar === ScalarType.STRING) return { type: "string" };
  if (scalar === ScalarType.BOOL) return { type: "boolean" };
  if (scalar === ScalarType.BYTES) return { type: "string", contentEncoding: "base64" };
  if (INTEGER_SCALARS.has(scalar)) return { type: "integer" };
  return { type: "number" };
}

class SchemaBuilder {
  readonly schemas: Record<string, Json> = {};
  private readonly comments: ReadonlyMap<string, string>;
  constructor(comments: ReadonlyMap<string, string>) {
    this.comments = comments;
  }

  describe(key: string, schema: Json): Json {
    const text = this.comments.get(key);
    return text ? { ...schema, description: text } : schema;
  }

  fieldSchema(field: DescField): Json {
    switch (field.fieldKind) {
      case "scalar": {
        const s = scalarSchema(field.scalar);
        return field.proto.proto3Optional
          ? { type: [s.type, "null"], ...(s.contentEncoding ? { contentEncoding: s.contentEncoding } : {}) }
          : s;
      }
      case "enum": {
        const s = { type: "string", enum: restEnumValues(field.enum) };
        return field.proto.proto3Optional ? { type: ["string", "null"], enum: [...s.enum, null] } : s;
      }
      case "message":
        return nullable(ref(this.message(field.message)));
      case "list":
        return {
          type: "array",
          items:
            field.listKind === "message"
              ? ref(this.message(field.message))
              : field.listKind === "enum"
                ? { type: "string", enum: restEnumValues(field.enum) }
                : scalarSchema(field.scalar),
        };
      case "map":
        return {
          type: "object",
          additionalProperties:
            field.mapKind === "message"
              ? ref(this.message(field.message))
              : field.mapKind === "enum"
                ? { type: "string" }
                : scalarSchema(field.scalar),
        };
    }
  }

  objectOf(message: DescMessage, fields: readonly DescField[], overrides: Record<string, Json> = {}): Json {
    const properties: Record<string, Json> = {};
    for (const field of fields)
      properties[field.name] =
        overrides[field.name] ?? this.describe(`${message.typeName}.${field.name}`, this.fieldSchema(field));
    return {
      type: "object",
      properties,
      required: fields.filter((f) => !writtenOnlyWhenTrue(message, f)).map((f) => f.name),
      additionalProperties: false,
    };
  }

  /** Registers a message's schema (once) and returns its component name. */
  message(message: DescMessage): string {
    const name = message.name;
    if (this.schemas[name]) return name;
    this.schemas[name] = {}; // placeholder: recursive messages refer to it
    const selection = okDependentFields(message);
    if (selection) {
      const full = this.objectOf(
        message,
        message.fields.filter((f) => selection.ok.includes(f.name)),
        { ok: { const: true } },
      );
      const short = this.objectOf(
        message,
        message.fields.filter((f) => selection.notOk.includes(f.name)),
        {
          ok: { const: false },
          reason: {
            type: "string",
            enum: NOT_OK_REASONS[message.typeName] ?? [],
            description: this.comments.get(`${message.typeName}.reason`) ?? "",
          },
        },
      );
      this.schemas[name] = this.describe(message.typeName, { oneOf: [full, short] });
    } else {
      this.schemas[name] = this.describe(message.typeName, this.objectOf(message, message.fields));
    }
    return name;
  }
}

const HEADERS: Record<string, Json> = {
  "RateLimit-Limit": {
    description:
      "Calls allowed in the window (paid endpoint: the daily cap; free endpoints: FREE_RATE_LIMIT per minute).",
    schema: { type: "integer" },
  },
  "RateLimit-Remaining": { description: "Calls left in the window.", schema: { type: "integer" } },
  "RateLimit-Reset": {
    description: "Seconds until the window resets (paid endpoint: 00:00 MYT; free endpoints: the end of the minute).",
    schema: { type: "integer" },
  },
  "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" } },
  "Idempotent-Replayed": {
    description:
      '"true" when this is the stored answer of an earlier call ' +
      "with the same Idempotency-Key (not charged again).",
    schema: { type: "string", enum: ["true"] },
  },
  "X-Request-Id": {
    description:
      "The request's id (the caller's x-request-id when it is 1–64 of " +
      "A-Za-z0-9._-, else a new UUID); also in the server's logs.",
    schema: { type: "string" },
  },
  Allow: { description: "The methods the path accepts.", schema: { type: "string" } },
  "X-Signals-Warnings": {
    description:
      "What the call asked for that was quietly changed or ignored, as the contract says (the " +
      "call is still answered, and a paid call charged): a `tf` that is not offered (4h is used), " +
      "symbols beyond the limit, duplicate symbols, symbols that read as pair names, query parameters " +
      'the operation does not read. Warnings are joined by `; `, e.g. `tf "2h" is not offered, ' +
      '4h used; parameter "symbol" ignored; 4 symbols beyond 8 ignored`. Absent when ' +
      "there is nothing to say. gRPC and Connect callers get it as response metadata.",
    schema: { type: "string" },
  },
};
/** A header of an answer: a reference, or (a reference cannot add `required`) the header itself. */
const header = (name: string, required = false): Json =>
  required ? { ...HEADERS[name], required: true } : { $ref: `#/components/headers/${name}` };

/** Headers of an answer, by kind of operation and status. */
function responseHeaders(kind: OperationKind, status: number): Json {
  const h: Json = { "X-Request-Id": header("X-Request-Id", true) };
  const rateLimited = status === 200 || status === 429 || (kind === "paid" && (status === 402 || status === 403));
  // Every charged or free 200 carries them; a replayed paid answer (Idempotent-Replayed) was not
  // charged again and does not.
  if (rateLimited)
    for (const name of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"])
      h[name] = header(name, status === 200 && kind !== "paid");
  if (status === 429) h["Retry-After"] = header("Retry-After", true);
  if (status === 405) h.Allow = header("Allow", true);
  if (kind === "paid" && status === 200) h["Idempotent-Replayed"] = header("Idempotent-Replayed");
  if (status === 200) h["X-Signals-Warnings"] = header("X-Signals-Warnings");
  return h;
}

const SAMPLE_QUERY: Record<string, string> = {
  symbols: "BTC,ETH",
  tf: "1h",
  limit: "5",
  series: "CPI YoY",
  since: "2026-11-01T00:00:00+08:00",
};

/** curl, TypeScript (connect-es) and Python (requests) samples of one operation. */
function codeSamples(method: DescMethod, path: string, serverUrl: string): Json[] {
  const params = method.input.fields
    .filter((f) => SAMPLE_QUERY[f.name] !== undefined && f.name !== "since" && f.name !== "series")
    .map((f) => [f.name, SAMPLE_QUERY[f.name]!] as const);
  const query = params.length
    ? `?${params.map(([k, v]) => `${k}=${encodeURIComponent(v).replace(/%2C/g, ",")}`).join("&")}`
    : "";
  const tsArgs = params.length ? `{ ${params.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(", ")} }` : "{}";
  const local = method.localName;
  const service = method.parent.name;
  const pyParams = params.length ? `, params={${params.map(([k, v]) => `"${k}": "${v}"`).join(", ")}}` : "";
  return [
    { lang: "curl", label: "curl", source: `curl -s -H "x-api-key: $KEY" '${serverUrl}${path}${query}'` },
    {
      lang: "TypeScript",
      label: "TypeScript (connect-es)",
      source: [
        `import { createClient } from "@connectrpc/connect";`,
        `import { createGrpcTransport } from "@connectrpc/connect-node";`,
        `import { ${service} } from "./gen/${method.parent.file.name}_pb.js";`,
        ``,
        `const client = createClient(${service}, createGrpcTransport({ baseUrl: "${serverUrl}" }));`,
        `const res = await client.${local}(${tsArgs}, { headers: { "x-api-key": process.env.KEY! } });`,
        `console.log(res);`,
      ].join("\n"),
    },
    {
      lang: "Python",
      label: "Python (requests)",
      source: [
        `import os`,
        `import requests`,
        ``,
        `r = requests.get("${serverUrl}${path}"${pyParams}, headers={"x-api-key": os.environ["KEY"]}, timeout=10)`,
        `print(r.status_code, r.json())`,
      ].join("\n"),
    },
  ];
}

/** Builds the OpenAPI 3.1 document of the given services' annotated methods. */
export function buildOpenApiDocument(input: OpenApiInput): Json {
  const comments = input.comments ?? new Map<string, string>();
  const builder = new SchemaBuilder(comments);
  const errorBody = builder.objectOf(ErrorBodySchema, ErrorBodySchema.fields, {
    ok: { const: false },
    error: {
      type: "string",
      enum: [...ERROR_CODES],
      description: "Stable machine code (the catalogue in src/errors.ts).",
    },
  });
  builder.schemas.ErrorBody = builder.describe(ErrorBodySchema.typeName, errorBody);
  const paths: Record<string, Json> = {};
  const tags: Json[] = [];
  for (const { service, kind } of input.services) {
    tags.push({ name: service.name, description: comments.get(service.typeName) ?? "" });
    for (const method of service.methods) {
      const route = httpRouteOf(method);
      if (!route) continue;
      const recorded = (status: string): Json => {
        const found = input.examples?.[route.path]?.[status];
        return found ? { examples: found } : {};
      };
      const responses: Record<string, Json> = {
        "200": {
          description: "OK",
          headers: responseHeaders(kind, 200),
          content: { "application/json": { schema: ref(builder.message(method.output)), ...recorded("200") } },
        },
      };
      for (const [status, codes] of Object.entries(ERROR_TABLES[kind]).sort(([a], [b]) => Number(a) - Number(b))) {
        responses[status] = {
          description: codes.map((c) => `\`${c}\`: ${errorSpec(c).message}`).join(" "),
          headers: responseHeaders(kind, Number(status)),
          content: {
            "application/json": {
              schema: { allOf: [ref("ErrorBody"), { type: "object", properties: { error: { enum: codes } } }] },
              ...recorded(status),
            },
          },
        };
      }
      const parameters: Json[] = method.input.fields.map((f) => ({
        name: f.name,
        in: "query",
        required: false,
        description: comments.get(`${method.input.typeName}.${f.name}`) ?? "",
        schema: { type: "string" },
        ...(SAMPLE_QUERY[f.name] ? { example: SAMPLE_QUERY[f.name] } : {}),
      }));
      if (kind === "paid") {
        parameters.push({
          name: "Idempotency-Key",
          in: "header",
          required: false,
          description:
            "Makes the call safe to retry: a retry with the same API key and Idempotency-Key " +
            "within 24 h gets the stored answer, not charged again.",
          schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" },
        });
      }
      paths[route.path] = {
        [route.verb.toLowerCase()]: {
          operationId: method.name,
          tags: [service.name],
          summary: `${method.name}${kind === "paid" ? " (1 Token)" : " (free)"}`,
          description: comments.get(`${service.typeName}.${method.name}`) ?? "",
          parameters,
          responses,
          "x-codeSamples": codeSamples(method, route.path, input.serverUrl),
        },
      };
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Signals Service API",
      version: "1",
      description: [
        "Current market-structure signals (paid, 1 Token per call) and free market context, over REST.",
        "The same methods are served over Connect, gRPC and gRPC-Web on the same port (see the proto files).",
        'Errors always have the body `{"ok":false,"error":"<code>","message":"<text>"}`.',
        `API keys: ${KEY_FORMAT} (pattern \`${API_KEY_PATTERN.source}\`); ${LEGACY_KEYS}`,
        "This document is generated from the proto descriptors: GET /api/v1/openapi.json " +
          "(free, no key); the reference page is /docs.",
        "New here? [Getting started](/getting-started): the first call in curl, " +
          "TypeScript and Python, reading `confirmed`, `defense` and `arming`, and " +
          "polling once per candle close. Plans and Tokens: [Pricing](/pricing).",
        ...(input.protoFiles?.length
          ? [
              [
                "**gRPC and Connect**: the public port answers gRPC server reflection " +
                  "(`grpc.reflection.v1` and `v1alpha`), so `buf curl`, grpcurl and Postman " +
                  "need no schema file. The `.proto` files, to generate a client:",
                ...input.protoFiles.map((name) => `- [${name}](/docs/proto/${name})`),
              ].join("\n"),
            ]
          : []),
      ].join("\n\n"),
    },
    servers: [{ url: input.serverUrl }],
    tags,
    security: [{ ApiKey: [] }],
    paths,
    components: {
      securitySchemes: { ApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "Your API key." } },
      headers: HEADERS,
      schemas: builder.schemas,
    },
  };
}
