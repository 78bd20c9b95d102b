/**
 * News from publishers' RSS, Atom and JSON feeds (NEWS_FEEDS), parsed by
 * @extractus/feed-extractor and pushed to DataIngestService as title, source, link, time and
 * coins; article bodies are never stored.
 *
 * Politeness: each feed is fetched at most once per refresh interval (never below 5 minutes),
 * with If-None-Match / If-Modified-Since from its last answer, and backs off exponentially on
 * errors (Retry-After respected). Feeds are fetched independently: one that fails, times out
 * or sends garbage only records an error. A body over MAX_FEED_BYTES is an error of its feed;
 * only the MAX_ITEMS_PER_FEED newest items of a feed are kept; each feed is pushed on its own
 * in batches of NEWS_PUSH_BATCH. The validators of a feed are kept only once its items are
 * stored, so a failed push refetches the same items next time.
 */
import { createHash } from "node:crypto";
import { extractFromJson, extractFromXml, type FeedEntry } from "@extractus/feed-extractor";
import type { NewsConfig } from "../../config/sources.ts";
import { MAX_NEWS_COINS } from "../../market-data/datasets.ts";
import { backoffMs } from "../../retry.ts";
import { tagCoins } from "./coin-tags.ts";
import { displayUrl, expectOk, HttpStatusError, httpGet, readBody } from "./http-get.ts";
import { streamOf, summaryOf } from "./ingest-client.ts";
import type { PeriodicSource, SourceDeps } from "./source.ts";

/** Longest wait after repeated failures of one feed. */
const MAX_BACKOFF_MS = 6 * 3_600_000;
/** Links and guids remembered to drop items repeated across feeds and rounds. */
const SEEN_LIMIT = 20_000;
/**
 * Largest feed body read (a 60,000-item feed took 15 s of CPU and +254 MB to
 * parse). Publishers' feeds are 10–300 KB; a larger answer is an error of that feed.
 */
export const MAX_FEED_BYTES = 1024 * 1024;
/** Items kept from one fetch of one feed: the newest by publication time. */
export const MAX_ITEMS_PER_FEED = 500;
/** Items per push: each feed is pushed on its own, in batches of at most this many. */
export const NEWS_PUSH_BATCH = 200;

export interface NewsItemOut {
  id: string;
  time: number;
  title: string;
  source: string;
  url: string;
  coins: string[];
}

interface FeedState {
  readonly url: string;
  etag: string | null;
  lastModified: string | null;
  nextDueMs: number;
  failures: number;
}

/** What one fetch of a feed produced: items (empty on 304) and the validators to keep once stored. */
interface FeedResult {
  feed: FeedState;
  items: NewsItemOut[];
  malformed: number;
  etag: string | null;
  lastModified: string | null;
  notModified: boolean;
}

/** Our stable id of an item: a digest of its link (what de-duplicates it in the store). */
export function newsId(link: string): string {
  return `rss-${createHash("sha256").update(link).digest("base64url").slice(0, 32)}`;
}

const collapse = (s: string) => s.replace(/\s+/g, " ").trim();

function isHttpLink(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** The publication time of an entry in UTC ms, from the feed's own date field; null when missing or unreadable. */
function entryTime(entry: FeedEntry): number | null {
  for (const raw of [entry.rawPublished, entry.published]) {
    if (typeof raw !== "string" || raw.trim() === "") continue;
    const ms = Date.parse(raw.trim());
    if (Number.isFinite(ms) && ms > 0) return ms;
  }
  return null;
}

/**
 * Parses a feed body (RSS, Atom or JSON Feed) into items; entries without a title, an http(s)
 * link or a readable date are counted as malformed and left out. Pure.
 */
export function parseFeed(
  body: string,
  contentType: string,
  feedUrl: string,
): { items: NewsItemOut[]; malformed: number } {
  const options = {
    descriptionMaxLen: 0,
    baseUrl: feedUrl,
    // Atom's normalised date prefers <updated>; the publication time is <published>.
    getExtraEntryFields: (raw: Record<string, unknown>) => ({
      rawPublished: raw.published ?? raw.pubDate ?? raw.date_published ?? raw["dc:date"],
    }),
  };
  const looksJson = /json/i.test(contentType) || body.trimStart().startsWith("{");
  const feed = looksJson ? extractFromJson(body, options) : extractFromXml(body, options);
  const source = collapse(String(feed.title ?? "")).slice(0, 100) || new URL(feedUrl).hostname;
  const items: NewsItemOut[] = [];
  let malformed = 0;
  for (const entry of feed.entries ?? []) {
    const title = collapse(String(entry.title ?? ""));
    const link = String(entry.link ?? "").trim();
    const time = entryTime(entry);
    if (title === "" || !isHttpLink(link) || link.length > 2048 || time === null) {
      malformed++;
      continue;
    }
    const shortTitle = title.length > 500 ? `${title.slice(0, 499)}…` : title;
    items.push({
      id: newsId(link),
      time,
      title: shortTitle,
      source,
      url: link,
      coins: tagCoins(title, MAX_NEWS_COINS),
    });
  }
  return { items, malformed };
}

/** The `limit` newest items (by publication time), newest first; a feed's order is not trusted. */
export function newestItems(items: readonly NewsItemOut[], limit: number): NewsItemOut[] {
  return [...items].sort((a, b) => b.time - a.time).slice(0, limit);
}

/** A small insertion-ordered set that forgets its oldest entries. */
class BoundedSet {
  readonly #set = new Set<string>();
  readonly #limit: number;
  constructor(limit: number) {
    this.#limit = limit;
  }
  has(key: string): boolean {
    return this.#set.has(key);
  }
  add(key: string): void {
    this.#set.add(key);
    if (this.#set.size > this.#limit) this.#set.delete(this.#set.values().next().value!);
  }
}

export type NewsSourceDeps = SourceDeps<NewsConfig>;

/** The news source: fetches the feeds that are due and pushes each feed's new items in batches. */
export function createNewsSource(deps: NewsSourceDeps): PeriodicSource {
  const { config, clock, logger, report } = deps;
  const feeds: FeedState[] = config.feeds.map((url) => ({
    url,
    etag: null,
    lastModified: null,
    nextDueMs: 0,
    failures: 0,
  }));
  const seen = new BoundedSet(SEEN_LIMIT);

  async function fetchFeed(feed: FeedState, signal: AbortSignal): Promise<FeedResult> {
    const headers: Record<string, string> = {
      accept:
        "application/rss+xml, application/atom+xml, application/feed+json, application/json;q=0.9, " +
        "application/xml;q=0.8, text/xml;q=0.8, */*;q=0.5",
    };
    if (feed.etag) headers["if-none-match"] = feed.etag;
    if (feed.lastModified) headers["if-modified-since"] = feed.lastModified;
    const res = await expectOk(await httpGet(feed.url, { headers, timeoutMs: deps.timeoutMs, signal }), clock());
    const etag = res.headers.get("etag") ?? feed.etag;
    const lastModified = res.headers.get("last-modified") ?? feed.lastModified;
    if (res.status === 304) return { feed, items: [], malformed: 0, etag, lastModified, notModified: true };
    const body = await readBody(res, MAX_FEED_BYTES);
    let parsed: ReturnType<typeof parseFeed>;
    try {
      parsed = parseFeed(body, res.headers.get("content-type") ?? "", feed.url);
    } catch (err) {
      throw new Error(`not a readable RSS, Atom or JSON feed (${(err as Error).message.slice(0, 120)})`);
    }
    return {
      feed,
      items: newestItems(parsed.items, MAX_ITEMS_PER_FEED),
      malformed: parsed.malformed,
      etag,
      lastModified,
      notModified: false,
    };
  }

  function failed(feed: FeedState, err: unknown, now: number): void {
    feed.failures++;
    const retryAfter = err instanceof HttpStatusError ? (err.retryAfterMs ?? 0) : 0;
    const wait = Math.max(backoffMs(feed.failures, config.refreshMs, MAX_BACKOFF_MS, "none"), retryAfter);
    feed.nextDueMs = now + wait;
    const message = `${displayUrl(feed.url)}: ${(err as Error).message}`;
    report.failure(message);
    logger.warn(
      { feed: displayUrl(feed.url), failures: feed.failures, retryInMs: wait, err: (err as Error).message },
      "news feed failed",
    );
  }

  return {
    name: "news",
    async poll(signal) {
      const now = clock();
      const due = feeds.filter((f) => f.nextDueMs <= now);
      if (due.length === 0) return;
      // Due feeds wait for their next turn whatever happens below; failures push it further out.
      for (const f of due) f.nextDueMs = now + config.refreshMs;
      const results: FeedResult[] = [];
      const settled = await Promise.allSettled(due.map((f) => fetchFeed(f, signal)));
      // Stopping aborts the fetches: that is no failure of the feeds.
      if (signal.aborted) return;
      settled.forEach((r, i) => {
        if (r.status === "fulfilled") results.push(r.value);
        else failed(due[i]!, r.reason, now);
      });
      // Each feed is pushed on its own, in batches: one large or refused feed never stops the
      // others. Items repeated across feeds and rounds are dropped first
      // (guid/link digests are the ids; the store ignores ids it already has).
      let stored = 0;
      for (const r of results) {
        const ids = new Set<string>();
        const fresh = r.items.filter((item) => !seen.has(item.id) && !ids.has(item.id) && ids.add(item.id));
        try {
          for (let at = 0; at < fresh.length; at += NEWS_PUSH_BATCH) {
            const batch = fresh.slice(at, at + NEWS_PUSH_BATCH);
            const res = summaryOf(
              await deps.ingest.pushNews(streamOf(batch.map((i) => ({ ...i, time: BigInt(i.time) }))), { signal }),
            );
            logger.info({ feed: displayUrl(r.feed.url), items: batch.length, ...res }, "news pushed");
            if (res.rejected > 0)
              logger.warn({ feed: displayUrl(r.feed.url), reasons: res.reasons }, "news items refused by the service");
            for (const item of batch) seen.add(item.id);
          }
        } catch (err) {
          if (signal.aborted) return;
          // Not all of this feed is stored: forget its validators so its items come again.
          failed(r.feed, new Error(`push failed: ${(err as Error).message}`), now);
          continue;
        }
        r.feed.etag = r.etag;
        r.feed.lastModified = r.lastModified;
        r.feed.failures = 0;
        stored++;
        if (r.malformed > 0)
          logger.warn(
            { feed: displayUrl(r.feed.url), malformed: r.malformed },
            "news feed items without title, link or date left out",
          );
      }
      if (stored > 0) report.success();
    },
  };
}
