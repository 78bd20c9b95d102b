/**
 * One request helper for tests that call a server's HTTP API with fetch: the API key header when
 * a key is given, the body read whole (so the connection is free again), JSON parsed when it is
 * JSON, and, on request, the answer checked against the published OpenAPI document.
 */
import { expect } from "vitest";
import { expectMatchesOpenApi } from "./openapi-contract.ts";

// Test code reads answer fields freely; the contract check, not the type, vouches for the shape.
export type Json = Record<string, any>;

export interface ApiAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** The final URL (after redirects), as the contract check sees it. */
  readonly url: string;
  readonly text: string;
  /** The parsed JSON body; the raw text when the body is not JSON. */
  readonly body: Json;
}

export interface ApiRequestOptions {
  /** Sent as x-api-key when set (null or absent: no key). */
  key?: string | null;
  headers?: Record<string, string>;
  method?: string;
  /** Check the answer against the OpenAPI document (status documented, body and headers match). */
  contract?: boolean;
}

/** `method` (GET by default) on `baseUrl` + `pathAndQuery`; resolves with the whole answer. */
export async function apiRequest(
  baseUrl: string,
  pathAndQuery: string,
  options: ApiRequestOptions = {},
): Promise<ApiAnswer> {
  const method = options.method ?? "GET";
  const headers = { ...(options.key ? { "x-api-key": options.key } : {}), ...options.headers };
  const res = await fetch(`${baseUrl}${pathAndQuery}`, { method, headers });
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = text as unknown as Json;
  }
  if (options.contract) expectMatchesOpenApi(method, res.url, { status: res.status, headers: res.headers, body });
  return { status: res.status, headers: res.headers, url: res.url, text, body };
}

/** GET with `key` that must answer 200 (the failure names the path and the body); its JSON body. */
export async function apiJson(baseUrl: string, pathAndQuery: string, key?: string | null): Promise<Json> {
  const answer = await apiRequest(baseUrl, pathAndQuery, { key });
  expect(answer.status, `${pathAndQuery}: ${answer.text.slice(0, 500)}`).toBe(200);
  return answer.body;
}
