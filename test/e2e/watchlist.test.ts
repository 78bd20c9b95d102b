/**
 * The live watchlist (/watch) with two server processes' worth of servers on one database: a
 * lead (the engine writer, fed here) and a follower (server/cluster.ts's second worker, which
 * only follows the market through NOTIFY). A member's stream on the follower sees a pushed
 * close within 2 s, its cells equal the paid API's entries at that moment (on the same
 * process), the view costs no Token, a second stream of the same session replaces the first,
 * the list is bounded and remembered, and a plan without the API gets no stream.
 */
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "../../src/server/create-server.ts";
import { createSession } from "../../src/web/sessions.ts";
import { getWatchlist, MAX_WATCH_SYMBOLS, parseWatchlist, saveWatchlist, WatchlistError } from "../../src/web/watchlist.ts";
import { getAccountSummary } from "../../src/accounts/accounts.ts";
import { structureBreak } from "../support/structure-break.ts";
import { INTERNAL_TOKEN, startTestServer, createTestClock, type TestServer } from "../support/test-server.ts";

const H = 3_600_000;
const COIN = "WLX";

/** A server-sent event stream read event by event. */
class EventReader {
  private buffer = "";
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }
  /** The next event named `name` (its data parsed), or null when the stream ends first. */
  async next(name: string): Promise<Record<string, any> | null> {
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const lines = block.split("\n");
        const event = lines.find((l) => l.startsWith("event: "))?.slice(7);
        const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
        if (event === name && data !== undefined) return JSON.parse(data);
        continue;
      }
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }
  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

describe("live watchlist across a lead and a follower on one database", () => {
  let lead: TestServer;
  let follower: Server;
  let followerUrl: string;
  let member: { accountId: number; apiKey: string };
  let cookie: string;
  const clock = createTestClock(Date.parse("2026-11-20T06:00:00Z"));
  const start = Date.parse("2026-11-15T00:00:00Z");
  const { history, breaker } = structureBreak(start);

  beforeAll(async () => {
    // Every candle of the series is recent enough not to be stale at the test clock.
    clock.set(breaker.openTime + H + 60_000);
    lead = await startTestServer({ feed: true, clock });
    follower = createServer(lead.config, { db: lead.db.handle, clock, logger: pino({ level: "silent" }), internalToken: INTERNAL_TOKEN, role: "follower" });
    followerUrl = `http://127.0.0.1:${(await follower.start()).port}`;
    member = await lead.account({ plan: "node" });
    const { token } = await createSession(lead.db.handle, member.accountId, clock(), lead.config.sessionTtlMs);
    cookie = `sid=${token}`;
    await lead.feed!.ingest(history.map((c) => ({ symbol: COIN, tf: "1h", ...c, closed: true })));
    await saveWatchlist(lead.db.handle, member.accountId, { symbols: [COIN], timeframes: ["1h"] }, clock());
  }, 60_000);

  afterAll(async () => {
    await follower?.stop(500);
    await lead?.close();
  });

  const openStream = async (base: string) => {
    const res = await fetch(`${base}/watch/stream`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    return new EventReader(res.body!);
  };

  it("a close pushed to the lead reaches the follower's stream within 2 s, equal to the follower's API answer, and costs no Token", async () => {
    const stream = await openStream(followerUrl);
    const before = (await stream.next("cells"))!.cells[0];
    expect(before).toMatchObject({ symbol: COIN, tf: "1h", ok: true });
    const tokensBefore = (await getAccountSummary(lead.db.handle, member.accountId, clock())).creditsLeft;

    const pushedAt = performance.now();
    await lead.feed!.ingest([{ symbol: COIN, tf: "1h", ...breaker, closed: true }]);
    const after = (await stream.next("cells"))!.cells[0];
    const elapsed = performance.now() - pushedAt;
    expect(elapsed).toBeLessThan(2_000);
    expect(after.price).toBe(breaker.close);
    expect(after.signal).toBe("LONG");
    expect(after.changed_at).toBe(breaker.openTime + H);

    // The view cost nothing; the API call below costs its one Token.
    expect((await getAccountSummary(lead.db.handle, member.accountId, clock())).creditsLeft).toBe(tokensBefore);
    const api = await fetch(`${followerUrl}/api/v1/signals?symbols=${COIN}&tf=1h`, { headers: { "x-api-key": member.apiKey } });
    expect(api.status).toBe(200);
    const entry = ((await api.json()) as { signals: Record<string, unknown>[] }).signals[0]!;
    for (const field of ["symbol", "tf", "ok", "price", "signal", "confirmed", "defense", "arming", "atr_pct"]) expect([field, after[field]]).toEqual([field, entry[field]]);
    await stream.cancel();
  });

  it("one stream per session: a second stream ends the first", async () => {
    const first = await openStream(lead.baseUrl);
    expect(await first.next("cells")).not.toBeNull();
    const second = await openStream(lead.baseUrl);
    expect(await second.next("cells")).not.toBeNull();
    // The first stream's body ends (same process: at once).
    expect(await first.next("cells")).toBeNull();
    await second.cancel();
  });

  it("a plan that cannot call the API gets no stream and the upgrade page", async () => {
    const basic = await lead.account({ plan: "basic" });
    const { token } = await createSession(lead.db.handle, basic.accountId, clock(), lead.config.sessionTtlMs);
    const stream = await fetch(`${lead.baseUrl}/watch/stream`, { headers: { cookie: `sid=${token}` } });
    expect(stream.status).toBe(403);
    const page = await fetch(`${lead.baseUrl}/watch`, { headers: { cookie: `sid=${token}` } });
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('id="watch-upgrade"');
  });

  it("the list is bounded and remembered", async () => {
    const many = Array.from({ length: MAX_WATCH_SYMBOLS + 1 }, (_, i) => `C${i}`).join(",");
    expect(() => parseWatchlist(many, ["1h"])).toThrow(WatchlistError);
    expect(() => parseWatchlist("BTC", [])).toThrow(WatchlistError);
    expect(() => parseWatchlist("BTC-USD", ["1h"])).toThrow(WatchlistError);
    await saveWatchlist(lead.db.handle, member.accountId, parseWatchlist("eth, btc, eth", ["4h", "1h"]), clock());
    expect(await getWatchlist(lead.db.handle, member.accountId)).toEqual({ symbols: ["ETH", "BTC"], timeframes: ["1h", "4h"] });
  });
});
