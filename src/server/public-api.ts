/**
 * The public REST API as one list: the services served on the public listener whose methods
 * carry `google.api.http` routes, with the kind of each (its error table). The OpenAPI
 * document, and the tests that walk it, are built from this list.
 */
import { fileURLToPath } from "node:url";
import { SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { MarketDataService } from "../../gen/signals/v1/market_data_pb.js";
import { UsageService } from "../../gen/signals/v1/usage_pb.js";
import { buildOpenApiDocument, type OpenApiInput } from "./openapi.ts";
import { readProtoComments } from "./proto-comments.ts";

export const PUBLIC_REST_SERVICES: OpenApiInput["services"] = [
  { service: SignalsService, kind: "paid" },
  { service: MarketDataService, kind: "free" },
  { service: UsageService, kind: "usage" },
];

const PROTO_DIR = fileURLToPath(new URL("../../proto/", import.meta.url));

/** The OpenAPI document served at GET /api/v1/openapi.json. */
export function publicOpenApiDocument(serverUrl: string): Record<string, unknown> {
  return buildOpenApiDocument({ services: PUBLIC_REST_SERVICES, serverUrl, comments: readProtoComments(PROTO_DIR) });
}
