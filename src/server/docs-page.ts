/**
 * The API's own description, free and without a key: GET /api/v1/openapi.json (the generated
 * OpenAPI 3.1 document) and GET /docs, a reference page rendered in the browser by Redoc from
 * that document. Redoc's standalone bundle is served from node_modules (no CDN), and the page's
 * Content-Security-Policy allows nothing from another origin.
 */
import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { WebRequest, WebResponse } from "../web/http.ts";
import { requestUrl, sendError } from "./rest.ts";

export const OPENAPI_PATH = "/api/v1/openapi.json";
export const DOCS_PATH = "/docs";
const REDOC_PATH = "/docs/redoc.standalone.js";
/** The public .proto files, each at /docs/proto/<its path>. */
export const PROTO_PATH = "/docs/proto/";

/**
 * Redoc injects its styles at run time (styled-components) and builds its search index in a
 * worker started from a blob: URL; everything else is same-origin.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src " +
  "'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' " +
  "blob:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Signals Service API reference</title>
</head>
<body>
<redoc spec-url="${OPENAPI_PATH}" hide-hostname="false" native-scrollbars="true"></redoc>
<script src="${REDOC_PATH}"></script>
</body>
</html>
`;

/** Redoc's sidebar shows a logo from Redocly's CDN; the page must not reach another host. */
const REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg";
const LOCAL_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

/** Redoc's standalone bundle from node_modules, with its one remote image made local. */
export function loadRedocBundle(): Buffer {
  const text = readFileSync(createRequire(import.meta.url).resolve("redoc/bundles/redoc.standalone.js"), "utf8");
  return Buffer.from(text.replaceAll(REDOCLY_LOGO, LOCAL_LOGO));
}

/** Serves the document, the page and its script, and the .proto files; resolves false for other paths. */
export function createDocsHandler(
  document: unknown,
  protoFiles: ReadonlyMap<string, Buffer> = new Map(),
): (req: WebRequest, res: WebResponse) => Promise<boolean> {
  const json = JSON.stringify(document);
  let redoc: Buffer | null = null;
  const redocBundle = () => (redoc ??= loadRedocBundle());
  return async (req, res) => {
    const path = requestUrl(req.url)?.pathname;
    const proto = path?.startsWith(PROTO_PATH) ? protoFiles.get(path.slice(PROTO_PATH.length)) : undefined;
    if (path !== OPENAPI_PATH && path !== DOCS_PATH && path !== REDOC_PATH && proto === undefined) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      sendError(res, "method_not_allowed", `Use GET for ${path}.`, { allow: "GET, HEAD" });
      return true;
    }
    const out = res as ServerResponse;
    if (proto !== undefined) {
      out.writeHead(200, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": String(proto.length),
        "content-disposition": `inline; filename="${path!.split("/").pop()}"`,
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
        "access-control-allow-origin": "*",
      });
      if (req.method === "HEAD") res.end();
      else res.end(proto);
      return true;
    }
    if (path === OPENAPI_PATH) {
      out.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": String(Buffer.byteLength(json)),
        "cache-control": "no-cache",
        "access-control-allow-origin": "*",
      });
      if (req.method === "HEAD") res.end();
      else res.end(json);
      return true;
    }
    const [body, type] =
      path === DOCS_PATH
        ? [Buffer.from(PAGE), "text/html; charset=utf-8"]
        : [redocBundle(), "text/javascript; charset=utf-8"];
    out.writeHead(200, {
      "content-type": type,
      "content-length": String(body.length),
      "cache-control": path === DOCS_PATH ? "no-cache" : "public, max-age=86400",
      "content-security-policy": DOCS_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      "x-frame-options": "DENY",
    });
    if (req.method === "HEAD") res.end();
    else res.end(body);
    return true;
  };
}
