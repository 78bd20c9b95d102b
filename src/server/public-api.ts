/**
 * The public REST API as one list: the services served on the public listener whose methods
 * carry `google.api.http` routes, with the kind of each (its error table). The OpenAPI
 * document, and the tests that walk it, are built from this list.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { DescFile } from "@bufbuild/protobuf";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_signals_v1_errors } from "../../gen/signals/v1/errors_pb.js";
import { MarketDataService } from "../../gen/signals/v1/market_data_pb.js";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { UsageService } from "../../gen/signals/v1/usage_pb.js";
import { buildOpenApiDocument, type OpenApiExamples, type OpenApiInput } from "./openapi.ts";
import { readProtoComments } from "./proto-comments.ts";

export const PUBLIC_REST_SERVICES: OpenApiInput["services"] = [
  { service: SignalsService, kind: "paid" },
  { service: MarketDataService, kind: "free" },
  { service: UsageService, kind: "usage" },
];

const PROTO_DIR = fileURLToPath(new URL("../../proto/", import.meta.url));
const EXAMPLES_FILE = fileURLToPath(new URL("./openapi-examples.json", import.meta.url));

/** The recorded examples (docs/openapi-examples.ts), or none when the file is absent. */
function recordedExamples(): OpenApiExamples | undefined {
  return existsSync(EXAMPLES_FILE) ? (JSON.parse(readFileSync(EXAMPLES_FILE, "utf8")) as OpenApiExamples) : undefined;
}

/**
 * The .proto sources of what the public port serves, by path (`signals/v1/signals.proto`), for
 * download from /docs/proto/: the public services' files with everything they import, the
 * health service, the error body and the google.rpc.ErrorInfo detail. Ours come from proto/;
 * the google.* ones from the google-proto-files package when it is installed. Well-known types
 * (google/protobuf/*) ship with every protobuf compiler and are left out.
 */
export function publicProtoFiles(): Map<string, Buffer> {
  const names = new Set<string>();
  const visit = (file: DescFile) => {
    if (names.has(file.proto.name) || file.proto.name.startsWith("google/protobuf/")) return;
    names.add(file.proto.name);
    file.dependencies.forEach(visit);
  };
  [
    ...PUBLIC_REST_SERVICES.map(({ service }) => service.file),
    Health.file,
    file_signals_v1_errors,
    file_google_rpc_error_details,
  ].forEach(visit);
  let googleDir: string | null = null;
  try {
    googleDir = path.dirname(createRequire(import.meta.url).resolve("google-proto-files/package.json"));
  } catch {
    /* not installed (a production install without dev dependencies): ours only */
  }
  const files = new Map<string, Buffer>();
  for (const name of [...names].sort()) {
    const source = [path.join(PROTO_DIR, name), ...(googleDir ? [path.join(googleDir, name)] : [])].find((candidate) =>
      existsSync(candidate),
    );
    if (source) files.set(name, readFileSync(source));
  }
  return files;
}

/** The OpenAPI document served at GET /api/v1/openapi.json. */
export function publicOpenApiDocument(
  serverUrl: string,
  protoFiles: readonly string[] = [...publicProtoFiles().keys()],
): Record<string, unknown> {
  const examples = recordedExamples();
  return buildOpenApiDocument({
    services: PUBLIC_REST_SERVICES,
    serverUrl,
    comments: readProtoComments(PROTO_DIR),
    protoFiles,
    ...(examples ? { examples } : {}),
  });
}
