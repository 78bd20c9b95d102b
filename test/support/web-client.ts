/**
 * A small browser-like HTTP client for the web page tests: a cookie jar, form posts, the CSRF
 * token read from the page, and a chosen source address (127.0.0.x) so throttling per client
 * address can be tested on loopback.
 */
import http from "node:http";

export interface WebResult {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  /** Raw Set-Cookie values of this response. */
  readonly setCookies: string[];
}

/** The value of the first hidden CSRF field of a page. */
export function csrfTokenOf(body: string): string {
  const match = /name="csrf_token" value="([^"]*)"/.exec(body);
  if (!match) throw new Error(`no CSRF field in page: ${body.slice(0, 300)}`);
  return match[1]!;
}

/** The key regeneration's confirmation form (`csrf_token` and the one-time `confirm`) of the page at /account/key. */
export function keyConfirmFormOf(body: string): Record<string, string> {
  const match = /name="confirm" value="([^"]*)"/.exec(body);
  if (!match) throw new Error(`no confirmation field in page: ${body.slice(0, 300)}`);
  return { csrf_token: csrfTokenOf(body), confirm: match[1]! };
}

/** The Set-Cookie value of `name` in a response, or undefined. */
export function setCookieOf(result: WebResult, name: string): string | undefined {
  return result.setCookies.find((c) => c.startsWith(`${name}=`));
}

export class WebClient {
  readonly baseUrl: string;
  readonly localAddress: string | undefined;
  readonly cookies = new Map<string, string>();

  constructor(baseUrl: string, options: { localAddress?: string } = {}) {
    this.baseUrl = baseUrl;
    this.localAddress = options.localAddress;
  }

  /** A request; cookies of the jar are sent and Set-Cookie updates the jar. Redirects are not followed. */
  request(
    method: string,
    path: string,
    options: { headers?: Record<string, string>; body?: string | Buffer } = {},
  ): Promise<WebResult> {
    const url = new URL(path, this.baseUrl);
    const headers: Record<string, string> = { ...options.headers };
    if (this.cookies.size > 0 && headers.cookie === undefined)
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    if (options.body !== undefined) headers["content-length"] = String(Buffer.byteLength(options.body));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method,
          headers,
          localAddress: this.localAddress,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () => {
            const setCookies = res.headers["set-cookie"] ?? [];
            for (const raw of setCookies) {
              const [pair = "", ...attributes] = raw.split(";").map((s) => s.trim());
              const eq = pair.indexOf("=");
              const name = pair.slice(0, eq);
              const expired = attributes.some((a) => /^max-age=0$/i.test(a));
              if (expired) this.cookies.delete(name);
              else this.cookies.set(name, pair.slice(eq + 1));
            }
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString("utf8"),
              setCookies,
            });
          });
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(options.body);
    });
  }

  get(path: string, headers: Record<string, string> = {}): Promise<WebResult> {
    return this.request("GET", path, { headers });
  }

  /** POSTs an urlencoded form (repeated fields as arrays). */
  post(
    path: string,
    fields: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ): Promise<WebResult> {
    const form = new URLSearchParams();
    for (const [name, value] of Object.entries(fields))
      for (const v of Array.isArray(value) ? value : [value]) form.append(name, v);
    return this.request("POST", path, {
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: form.toString(),
    });
  }

  /**
   * Opens a one-time password link as a browser does: its 303 moves the token into a cookie and
   * out of the address; the page it leads to is returned. Throws when the link is not answered so.
   */
  async openPasswordLink(link: string): Promise<WebResult> {
    const opened = await this.get(link);
    const path = link.split("?")[0]!;
    if (opened.status !== 303 || opened.headers.location !== path)
      throw new Error(`${path} answered ${opened.status} ${String(opened.headers.location)}`);
    return this.get(path);
  }

  /** Opens the sign-in form (getting the CSRF cookie) and submits it. */
  async signIn(email: string, password: string, extra: Record<string, string> = {}): Promise<WebResult> {
    const form = await this.get("/signin");
    return this.post("/signin", { csrf_token: csrfTokenOf(form.body), email, password, ...extra });
  }

  /** The CSRF token of the signed-in pages (read from the account page). */
  async sessionCsrfToken(): Promise<string> {
    const page = await this.get("/account");
    if (page.status !== 200) throw new Error(`account page answered ${page.status}`);
    return csrfTokenOf(page.body);
  }

  /**
   * Regenerates the key as a browser does: the confirmation page, its form posted (303), then
   * the one-time page it leads to. `form` is the posted confirmation, to send it again.
   */
  async regenerateKey(): Promise<{ form: Record<string, string>; posted: WebResult; shown: WebResult }> {
    const confirm = await this.get("/account/key");
    if (confirm.status !== 200) throw new Error(`key confirmation page answered ${confirm.status}`);
    const form = keyConfirmFormOf(confirm.body);
    const posted = await this.post("/account/key", form);
    const shown = posted.status === 303 ? await this.get(String(posted.headers.location)) : posted;
    return { form, posted, shown };
  }
}
