/**
 * Static files of the pages, all served by this server (nothing from a CDN, so the pages work
 * with no internet access): our stylesheet and two small scripts from src/web/static/, and
 * TradingView's lightweight-charts standalone production build from node_modules. Loaded once
 * into memory with a gzip copy; URLs carry a content hash (`?v=`), so browsers may keep them.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import type { ServerResponse } from "node:http";
import { header, type WebRequest, type WebResponse } from "./http.ts";

interface Asset {
  readonly body: Buffer;
  readonly gzip: Buffer;
  readonly type: string;
  readonly hash: string;
}

export type AssetName = "app.css" | "account.js" | "chart.js" | "lightweight-charts.js";

export interface Assets {
  /** The URL of an asset, with its content hash. */
  url(name: AssetName): string;
  /** Serves GET /assets/<name>; false when the path is not an asset. */
  handle(req: WebRequest, res: WebResponse, pathname: string): boolean;
}

const STATIC_DIR = fileURLToPath(new URL("./static/", import.meta.url));

function lightweightChartsFile(): string {
  // The package exports only "." and "./package.json"; the standalone build sits beside it.
  const pkg = createRequire(import.meta.url).resolve("lightweight-charts/package.json");
  return path.join(path.dirname(pkg), "dist", "lightweight-charts.standalone.production.js");
}

function load(file: string, type: string): Asset {
  const body = readFileSync(file);
  return { body, gzip: gzipSync(body, { level: 9 }), type, hash: createHash("sha256").update(body).digest("hex").slice(0, 16) };
}

/** Reads every asset (call once, when the app is built). */
export function loadAssets(): Assets {
  const assets = new Map<string, Asset>([
    ["app.css", load(path.join(STATIC_DIR, "app.css"), "text/css; charset=utf-8")],
    ["account.js", load(path.join(STATIC_DIR, "account.js"), "text/javascript; charset=utf-8")],
    ["chart.js", load(path.join(STATIC_DIR, "chart.js"), "text/javascript; charset=utf-8")],
    ["lightweight-charts.js", load(lightweightChartsFile(), "text/javascript; charset=utf-8")],
  ]);
  return {
    url(name) {
      return `/assets/${name}?v=${assets.get(name)!.hash}`;
    },
    handle(req, res, pathname) {
      if (!pathname.startsWith("/assets/")) return false;
      const asset = assets.get(pathname.slice("/assets/".length));
      if (!asset) return false;
      const etag = `"${asset.hash}"`;
      const versioned = new URL(req.url ?? "/", "http://local.invalid").searchParams.get("v") === asset.hash;
      const headers: Record<string, string> = {
        "content-type": asset.type,
        "x-content-type-options": "nosniff",
        etag,
        vary: "accept-encoding",
        // A hashed URL never changes content; an unversioned one must be revalidated.
        "cache-control": versioned ? "public, max-age=31536000, immutable" : "no-cache",
      };
      if (req.method !== "GET" && req.method !== "HEAD") {
        (res as ServerResponse).writeHead(405, { allow: "GET, HEAD", "content-length": "0" });
        res.end();
        return true;
      }
      if (header(req, "if-none-match") === etag) {
        (res as ServerResponse).writeHead(304, headers);
        res.end();
        return true;
      }
      const gzip = /\bgzip\b/.test(header(req, "accept-encoding") ?? "");
      const body = gzip ? asset.gzip : asset.body;
      (res as ServerResponse).writeHead(200, { ...headers, ...(gzip ? { "content-encoding": "gzip" } : {}), "content-length": String(body.length) });
      if (req.method === "HEAD") res.end();
      else res.end(body);
      return true;
    },
  };
}
