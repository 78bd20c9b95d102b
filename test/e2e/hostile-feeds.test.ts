/**
 * News feeds that attack the feeder (issue 23, items 7 and 8), with the real news source pushing
 * through a real server's internal listener:
 *
 * - item 8: a feed answering `302 → http://127.0.0.1:<internal>/metrics`, and redirects to a
 *   canary listener on loopback by http, by https to an IP literal and by https to `localhost`.
 *   None is followed: the canary sees no connection, and the good feed's item is stored.
 * - item 7: a feed of 50,001 items (once it failed the whole push, `a stream may carry at most
 *   50000 rows`, and the good feed's item was never stored) is refused by its size alone, and a
 *   feed under the byte cap with 1,200 items gives its 500 newest, pushed in batches.
 */
import net from "node:net";
import { sql } from "drizzle-orm";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerClient, type ServerClient } from "../../src/feeder/server-client.ts";
import { httpGet } from "../../src/feeder/sources/http-get.ts";
import { type ContextSources, parseContextSourcesConfig, startContextSources } from "../../src/feeder/sources/index.ts";
import {
  MAX_FEED_BYTES,
  MAX_ITEMS_PER_FEED,
  NEWS_PUSH_BATCH,
  newsId,
  parseFeed,
} from "../../src/feeder/sources/news.ts";
import { apiJson } from "../support/api-request.ts";
import { type FakeNews, rss, startFakeNews } from "../support/fake-news.ts";
import { waitFor as pollUntil } from "../support/reliability.ts";
import { createTestClock, INTERNAL_TOKEN, startTestServer, type TestServer } from "../support/test-server.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const NOW = Date.parse("2026-11-15T04:00:00Z");
const clock = createTestClock(NOW);
const GOOD = { link: "https://news.example/good/1", title: "Bitcoin holds its range" };
/** An RSS feed of `count` items, one a minute back from 03:00 UTC. */
function feedOf(name: string, count: number): string {
  const base = Date.parse("2026-11-15T03:00:00Z");
  const item = (i: number) =>
    `<item><title>${name} ${i}</title><link>https://news.example/${name}/${i}</link>` +
    `<pubDate>${new Date(base - i * 60_000).toUTCString()}</pubDate></item>`;
  return rss(
    name,
    Array.from({ length: count }, (_, i) => item(i)),
  );
}
const HUGE_ITEMS = 50_001;
const MANY_ITEMS = 1_200;
const hugeFeed = feedOf("huge", HUGE_ITEMS);
const manyFeed = feedOf("many", MANY_ITEMS);
const figures: Record<string, unknown> = {};

const goodItem = `<item><guid>g-1</guid><title>${GOOD.title}</title><link>${GOOD.link}</link>`;
const goodFeed = rss("Good Wire", [`${goodItem}<pubDate>Sun, 15 Nov 2026 03:00:00 GMT</pubDate></item>`]);

let server: TestServer;
let apiKey: string;
let news: FakeNews;
let sources: ContextSources;
let serverClient: ServerClient;
let canary: net.Server;
let canaryPort: number;
let canaryConnections = 0;
const logLines: Array<Record<string, unknown>> = [];

/** Redirect routes of the fake publisher: path → Location. */
function redirects(): Record<string, string> {
  return {
    "/to-metrics.xml": `${server.internalUrl}/metrics`,
    "/to-canary-http.xml": `http://127.0.0.1:${canaryPort}/feed.xml`,
    "/to-canary-https-ip.xml": `https://127.0.0.1:${canaryPort}/feed.xml`,
    "/to-canary-https-name.xml": `https://localhost:${canaryPort}/feed.xml`,
    "/to-canary-mapped.xml": `https://[::ffff:127.0.0.1]:${canaryPort}/feed.xml`,
  };
}

const waitFor = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = EVENT_WAIT_MS) =>
  pollUntil(check, timeoutMs, () => `${what}: ${JSON.stringify(sources?.statuses())}`, 20);

async function storedNewsIds(): Promise<string[]> {
  return ((await apiJson(server.baseUrl, "/api/v1/news?limit=100", apiKey)).items as Array<{ id: string }>).map(
    (i) => i.id,
  );
}

beforeAll(async () => {
  server = await startTestServer({ clock, env: { FREE_RATE_LIMIT: "100000" } });
  ({ apiKey } = await server.account());
  canary = net.createServer((socket) => {
    canaryConnections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => canary.listen(0, "127.0.0.1", resolve));
  canaryPort = (canary.address() as net.AddressInfo).port;
  news = await startFakeNews();
  news.route("/good.xml", { body: goodFeed });
  news.route("/huge.xml", { body: hugeFeed });
  news.route("/many.xml", { body: manyFeed });
  for (const [path, location] of Object.entries(redirects()))
    news.route(path, { status: 302, body: "", headers: { location } });
  const config = parseContextSourcesConfig({
    NEWS_FEEDS: ["/good.xml", "/huge.xml", "/many.xml", ...Object.keys(redirects())]
      .map((p) => news.baseUrl + p)
      .join(","),
    // No timeout is under test here (every fake answers at once): the longest one, so that a loaded machine's
    // slowness is never mistaken for a feed that does not answer.
    SOURCE_TIMEOUT: "300",
  });
  const logger = pino(
    { level: "info" },
    { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  sources = startContextSources({
    datasets: ["news"],
    config,
    logger,
    registry: new Registry(),
    ingest: (serverClient = createServerClient(server.internalUrl, INTERNAL_TOKEN, "hostile-feeds-test")).dataIngest,
    clock,
    tickMs: 20,
  });
});

afterAll(async () => {
  console.log(`[reliability figures] hostile-feeds ${JSON.stringify(figures)}`);
  await sources?.stop();
  serverClient?.close();
  await news?.close();
  await new Promise((resolve) => canary?.close(resolve));
  await server?.close();
});

describe("redirects (item 8)", () => {
  it(
    "a feed redirecting to the internal /metrics or to loopback " + "is not followed; the good feed's item is stored",
    async () => {
      const failing = () => logLines.filter((l) => l.msg === "news feed failed");
      await waitFor("every redirecting feed reported", () =>
        Object.keys(redirects()).every((path) => failing().some((l) => String(l.feed).endsWith(path))),
      );
      await waitFor("the good item", async () => (await storedNewsIds()).includes(newsId(GOOD.link)));
      for (const path of Object.keys(redirects())) {
        const line = failing().find((l) => String(l.feed).endsWith(path));
        expect(line, path).toBeDefined();
        expect(String(line!.err), path).toMatch(/^redirect to .* not followed/);
        expect(news.served(path)).toEqual([302]);
      }
      expect(canaryConnections).toBe(0);
      expect(await storedNewsIds()).toContain(newsId(GOOD.link));
    },
  );

  it(
    "each hop is checked: a redirect chain that ends on loopback " +
      "is refused at that hop, and no chain is longer than 3",
    async () => {
      news.route("/hop1.xml", { status: 302, body: "", headers: { location: `${news.baseUrl}/hop2.xml` } });
      // The first hop is to the same http origin: not https, so already refused.
      await expect(httpGet(`${news.baseUrl}/hop1.xml`, { timeoutMs: EVENT_WAIT_MS })).rejects.toThrow(
        /not followed: only https/,
      );
      expect(news.served("/hop2.xml")).toEqual([]);
      // A redirect without Location is handed back as it is (the caller reports the status).
      news.route("/no-location.xml", { status: 302, body: "" });
      expect((await httpGet(`${news.baseUrl}/no-location.xml`, { timeoutMs: EVENT_WAIT_MS })).status).toBe(302);
      expect(canaryConnections).toBe(0);
    },
  );
});

describe("large feeds (item 7)", () => {
  const storedIdsLike = async (prefix: string) =>
    (
      await server.db.handle.rows<{ url: string }>(
        sql`SELECT url FROM news_items WHERE url LIKE ${`https://news.example/${prefix}/%`}`,
      )
    ).map((r) => r.url);

  it(
    "a 50,001-item feed is refused by its size, the good feed's item " +
      "is stored, and a 1,200-item feed gives its 500 newest in batches",
    async () => {
      expect(Buffer.byteLength(hugeFeed)).toBeGreaterThan(MAX_FEED_BYTES);
      expect(Buffer.byteLength(manyFeed)).toBeLessThan(MAX_FEED_BYTES);
      const failing = () =>
        logLines.filter((l) => l.msg === "news feed failed" && String(l.feed).endsWith("/huge.xml"));
      /** The feeder's own log of each batch it pushed (written once the server has answered it). */
      const pushes = () =>
        logLines
          .filter((l) => l.msg === "news pushed" && String(l.feed).endsWith("/many.xml"))
          .map((l) => Number(l.items));
      await waitFor("the huge feed refused", () => failing().length > 0);
      expect(String(failing()[0]!.err)).toMatch(/larger than 1048576 bytes/);
      // The rows are stored before the feeder reads the answer and logs the push: wait for both.
      await waitFor(
        "the good item and the many feed, stored and logged",
        async () =>
          (await storedNewsIds()).includes(newsId(GOOD.link)) &&
          (await storedIdsLike("many")).length === MAX_ITEMS_PER_FEED &&
          pushes().reduce((sum, items) => sum + items, 0) >= MAX_ITEMS_PER_FEED,
      );
      const many = await storedIdsLike("many");
      expect(many).toHaveLength(MAX_ITEMS_PER_FEED);
      // The newest: items 0 … 499 (one a minute back from 03:00).
      expect(new Set(many)).toEqual(
        new Set(Array.from({ length: MAX_ITEMS_PER_FEED }, (_, i) => `https://news.example/many/${i}`)),
      );
      expect(await storedIdsLike("huge")).toEqual([]);
      expect(pushes()).toEqual([200, 200, 100]);
      expect(Math.max(...pushes())).toBeLessThanOrEqual(NEWS_PUSH_BATCH);
      figures.hugeFeedBytes = Buffer.byteLength(hugeFeed);
      figures.manyFeedBytes = Buffer.byteLength(manyFeed);
    },
  );

  it("a feed at the byte cap still parses whole (its parse time is the CPU the cap bounds; recorded)", () => {
    // The most items that fit in MAX_FEED_BYTES with this item shape.
    const perItem = Buffer.byteLength(manyFeed) / MANY_ITEMS;
    const count = Math.floor(MAX_FEED_BYTES / perItem) - 10;
    const body = feedOf("cap", count);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(MAX_FEED_BYTES);
    const started = process.hrtime.bigint();
    const parsed = parseFeed(body, "application/rss+xml", "https://news.example/cap.xml");
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect(parsed.items).toHaveLength(count);
    figures.parseAtCap = { items: count, bytes: Buffer.byteLength(body), ms: Math.round(ms) };
  });
});
