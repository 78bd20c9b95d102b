/**
 * Static files of the pages, all served by this server (nothing from a CDN, so the pages work
 * with no internet access): our stylesheet, three small scripts and the icon from src/web/static/, and
 * TradingView's lightweight-charts standalone production build from node_modules. Loaded once
 * into memory with a gzip copy; URLs carry a content hash (`?v=`), so browsers may keep them.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { Context } from "hono";

interface Asset {
  readonly body: Buffer;
  readonly gzip: Buffer;
  readonly type: string;
  readonly hash: string;
}

export type AssetName =
  | "app.css"
  | "account.js"
  | "telegram.js"
  | "chart.js"
  | "watch.js"
  | "favicon.svg"
  | "lightweight-charts.js";

export interface Assets {
  /** The URL of an asset, with its content hash. */
  url(name: AssetName): string;
  /** The answer to a request for /assets/<name>; null when there is no such asset. */
  serve(c: Context, name: string): Response | null;
}

const STATIC_DIR = fileURLToPath(new URL("./static/", import.meta.url));

function lightweightChartsFile(): string {
  // The package exports only "." and "./package.json"; the standalone build sits beside it.
  const pkg = createRequire(import.meta.url).resolve("lightweight-charts/package.json");
  return path.join(path.dirname(pkg), "dist", "lightweight-charts.standalone.production.js");
}

function load(file: string, type: string): Asset {
  const body = readFileSync(file);
  return {
    body,
    gzip: gzipSync(body, { level: 9 }),
    type,
    hash: createHash("sha256").update(body).digest("hex").slice(0, 16),
  };
}

/** Reads every asset (call once, when the app is built). */
export function loadAssets(): Assets {
  const assets = new Map<string, Asset>([
    ["app.css", load(path.join(STATIC_DIR, "app.css"), "text/css; charset=utf-8")],
    ["account.js", load(path.join(STATIC_DIR, "account.js"), "text/javascript; charset=utf-8")],
    ["telegram.js", load(path.join(STATIC_DIR, "telegram.js"), "text/javascript; charset=utf-8")],
    ["chart.js", load(path.join(STATIC_DIR, "chart.js"), "text/javascript; charset=utf-8")],
    ["watch.js", load(path.join(STATIC_DIR, "watch.js"), "text/javascript; charset=utf-8")],
    ["favicon.svg", load(path.join(STATIC_DIR, "favicon.svg"), "image/svg+xml")],
    ["lightweight-charts.js", load(lightweightChartsFile(), "text/javascript; charset=utf-8")],
  ]);
  return {
    url(name) {
      return `/assets/${name}?v=${assets.get(name)!.hash}`;
    },
    serve(c, name) {
      const asset = assets.get(name);
      if (!asset) return null;
      const etag = `"${asset.hash}"`;
      const headers: Record<string, string> = {
        "content-type": asset.type,
        "x-content-type-options": "nosniff",
        etag,
        vary: "accept-encoding",
        // A hashed URL never changes content; an unversioned one must be revalidated.
        "cache-control": c.req.query("v") === asset.hash ? "public, max-age=31536000, immutable" : "no-cache",
      };
      if (c.req.method !== "GET" && c.req.method !== "HEAD")
        return c.body(null, 405, { allow: "GET, HEAD", "content-length": "0" });
      if (c.req.header("if-none-match") === etag) return c.body(null, 304, headers);
      const gzip = /\bgzip\b/.test(c.req.header("accept-encoding") ?? "");
      const body = gzip ? asset.gzip : asset.body;
      return c.body(new Uint8Array(body), 200, {
        ...headers,
        ...(gzip ? { "content-encoding": "gzip" } : {}),
        "content-length": String(body.length),
      });
    },
  };
}
