/**
 * The context sources' HTTP GET: a timeout, a User-Agent that names us, conditional headers,
 * and errors that say what the provider answered without repeating the URL (it may carry
 * an API key in its query).
 */
export const USER_AGENT = "signals-feeder/0.1 (context sources; +https://github.com/)";

/** A provider answered with an error status. */
export class HttpStatusError extends Error {
  override name = "HttpStatusError";
  readonly status: number;
  /** From Retry-After, when the provider sent one. */
  readonly retryAfterMs: number | null;
  constructor(status: number, message: string, retryAfterMs: number | null) {
    super(message);
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (header === null || header.trim() === "") return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** Exponential back-off: `baseMs · 2^(failures-1)`, at most `maxMs`. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

/** GET with a timeout (and the caller's abort signal); the response is returned whatever its status. */
export async function httpGet(url: string, options: { headers?: Record<string, string>; timeoutMs: number; signal?: AbortSignal }): Promise<Response> {
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  try {
    return await fetch(url, { headers: { "user-agent": USER_AGENT, ...options.headers }, signal: AbortSignal.any(signals), redirect: "follow" });
  } catch (err) {
    const e = err as Error;
    if (e.name === "TimeoutError") throw new Error(`no answer within ${options.timeoutMs} ms`);
    if (e.name === "AbortError") throw new Error("stopped");
    throw new Error(`request failed: ${(e.cause as Error | undefined)?.message ?? e.message}`);
  }
}

/** Reads the body as text within the same timeout rules as the request; a non-2xx status becomes HttpStatusError. */
export async function expectOk(res: Response, now: number, describe: (body: string) => string = (b) => b.slice(0, 200)): Promise<Response> {
  if (res.ok || res.status === 304) return res;
  const body = await res.text().catch(() => "");
  throw new HttpStatusError(res.status, `HTTP ${res.status}${body.trim() ? `: ${describe(body).replace(/\s+/g, " ").trim()}` : ""}`, retryAfterMs(res.headers.get("retry-after"), now));
}

/** Largest body we read from a provider: a feed or a coin list is far smaller; a runaway answer is an error, not a crash. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** The body as UTF-8 text, refusing one larger than MAX_BODY_BYTES. */
export async function readBody(res: Response, maxBytes = MAX_BODY_BYTES): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new Error(`answer of ${declared} bytes is larger than ${maxBytes}`);
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new Error(`answer larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The body parsed as JSON (within MAX_BODY_BYTES). */
export async function readJson<T>(res: Response): Promise<T> {
  const text = await readBody(res);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error("answer is not JSON");
  }
}

/** Origin and path of a URL, for logs and statuses (never its query, which may hold a key). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}
