/**
 * A fake publisher serving feeds in the documented formats (RSS 2.0, Atom 1.0, JSON Feed
 * 1.1) with ETag / Last-Modified and conditional GETs (304), and faults on demand (a status,
 * a delay). Each path's feed can be replaced during a test.
 */
import { type FakeAnswer, type FakeHttp, startFakeHttp } from "./fake-http.ts";

export interface FeedRoute {
  status?: number;
  body?: string;
  contentType?: string;
  etag?: string;
  lastModified?: string;
  delayMs?: number;
  /** More response headers (a redirect's `location`, say). */
  headers?: Record<string, string>;
}

export interface FakeNews extends FakeHttp {
  /** Sets (or replaces) what `path` answers. */
  route(path: string, feed: FeedRoute): void;
  /** Answers given per path, in order: the status codes. */
  served(path: string): number[];
}

/** Starts the fake publisher. */
export async function startFakeNews(): Promise<FakeNews> {
  const routes = new Map<string, FeedRoute>();
  const served = new Map<string, number[]>();
  const fake = await startFakeHttp((req): FakeAnswer => {
    const route = routes.get(req.path);
    const answer = ((): FakeAnswer => {
      if (!route) return { status: 404, body: "not found" };
      const status = route.status ?? 200;
      const headers: Record<string, string> = {
        "content-type": route.contentType ?? "application/rss+xml; charset=utf-8",
      };
      if (route.etag) headers.etag = route.etag;
      if (route.lastModified) headers["last-modified"] = route.lastModified;
      Object.assign(headers, route.headers);
      // Conditional GET as RFC 9110 says: If-None-Match wins over If-Modified-Since.
      const inm = req.headers["if-none-match"];
      const ims = req.headers["if-modified-since"];
      const notModified =
        status === 200 &&
        (inm !== undefined
          ? route.etag !== undefined && inm === route.etag
          : ims !== undefined && route.lastModified !== undefined && ims === route.lastModified);
      if (notModified) return { status: 304, headers: route.etag ? { etag: route.etag } : {}, delayMs: route.delayMs };
      return { status, body: route.body ?? "", headers, delayMs: route.delayMs };
    })();
    served.set(req.path, [...(served.get(req.path) ?? []), answer.status]);
    return answer;
  });
  return {
    ...fake,
    route: (path, feed) => routes.set(path, feed),
    served: (path) => served.get(path) ?? [],
  };
}

/** An RSS 2.0 document with the given items (raw XML of each <item>). */
export function rss(title: string, items: string[]): string {
  const channel = `<title>${title}</title><link>https://publisher.example/</link><description>fake</description>`;
  const xml = '<?xml version="1.0" encoding="UTF-8"?>\n';
  return `${xml}<rss version="2.0"><channel>${channel}${items.join("")}</channel></rss>`;
}

/** An Atom 1.0 document with the given entries (raw XML of each <entry>). */
export function atom(title: string, entries: string[]): string {
  const head = `<title>${title}</title><id>urn:fake:${title}</id><updated>2026-11-15T02:00:00Z</updated>`;
  const xml = '<?xml version="1.0" encoding="utf-8"?>\n';
  return `${xml}<feed xmlns="http://www.w3.org/2005/Atom">${head}${entries.join("")}</feed>`;
}

/** A JSON Feed 1.1 document. */
export function jsonFeed(title: string, items: unknown[]): string {
  return JSON.stringify({
    version: "https://jsonfeed.org/version/1.1",
    title,
    home_page_url: "https://publisher.example/",
    items,
  });
}
