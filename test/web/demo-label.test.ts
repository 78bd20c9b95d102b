/**
 * No page shows a demo-derived figure without the label (issue 22 §3): a server holding a real
 * coin (BTC, real 1h candles) and a demo coin (XRP, the demo feed's synthetic 15m candles):
 * the demo coin's chart page and its entry in the chart list say "demo data: synthetic
 * prices", the real coin's say nothing of the kind; /track-record counts the real coin only;
 * /status names each coin's provenance, and the free movers rank the real coin only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { demoCandles } from "../../src/market/demo-feed.ts";
import { DEMO_DATA_LABEL } from "../../src/market/provenance.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { computeLiveRecord, loadLiveInputs } from "../../src/track-record/live-record-data.ts";
import { loadRealCandles } from "../support/real-candles.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

const H = 3_600_000;
const Q = 15 * 60_000;

describe("demo and real coins on one server's pages", () => {
  let server: TestServer;
  let member: WebClient;
  let apiKey: string;

  beforeAll(async () => {
    const demo = demoCandles("XRP", 3_000);
    const end = demo.at(-1)!.openTime + Q;
    const real = loadRealCandles("BTC", "1h")!
      .slice(-700)
      .map((c, i, all) => ({ ...c, openTime: end - (all.length - i) * H }));
    const clock = createTestClock(end + 60_000);
    server = await startTestServer({ feed: true, clock });
    const closed =
      (symbol: string, tf: "15m" | "1h") =>
      (c: (typeof demo)[number]): CandleUpdate => ({ symbol, tf, ...c, closed: true });
    expect((await server.feed!.ingest(demo.map(closed("XRP", "15m")), { alerts: false, demo: true })).rejected).toBe(0);
    // BTC's history is imported, then its last 200 hours are pushed as they close, so its signals
    // are live and the public (live-only) track record has a real series to show.
    const LIVE_HOURS = 200;
    expect(
      (await server.feed!.ingest(real.slice(0, -LIVE_HOURS).map(closed("BTC", "1h")), { alerts: false })).rejected,
    ).toBe(0);
    for (const candle of real.slice(-LIVE_HOURS)) {
      clock.set(candle.openTime + H + 60_000);
      expect((await server.feed!.ingest([closed("BTC", "1h")(candle)])).rejected).toBe(0);
    }
    const account = await server.account({ email: "dora.demo@example.test" });
    apiKey = account.apiKey;
    await setMemberPassword(
      server.db.handle,
      account.accountId,
      "a long and correct password",
      server.config.passwordHashCost,
    );
    member = new WebClient(server.baseUrl);
    expect((await member.signIn("dora.demo@example.test", "a long and correct password")).status).toBe(303);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it("labels the demo coin's chart page and chart list entry, and not the real coin's", async () => {
    const xrp = await member.get("/charts/XRP?tf=1h");
    expect(xrp.status).toBe(200);
    expect(xrp.body).toContain('id="demo-data"');
    expect(xrp.body).toContain("Demo data: synthetic prices.");
    // The label comes before the first figure of the page (its levels, chart, backtest and history).
    expect(xrp.body.indexOf('id="demo-data"')).toBeLessThan(xrp.body.indexOf('id="now-h"'));
    const btc = await member.get("/charts/BTC?tf=1h");
    expect(btc.status).toBe(200);
    expect(btc.body).not.toMatch(/demo-data|synthetic/i);
    const list = await member.get("/charts");
    expect(list.body).toMatch(
      new RegExp(`<h2>XRP <span class="muted demo-label">\\(${DEMO_DATA_LABEL}\\)</span></h2>`),
    );
    expect(list.body).toContain("<h2>BTC</h2>");
  });

  it("counts only the real coin on /track-record", async () => {
    const body = await (await fetch(`${server.baseUrl}/track-record`)).text();
    expect(body).toContain('data-series="BTC/1h"');
    expect(body).not.toContain('data-series="XRP/');
  });

  it("names each coin's provenance on /status", async () => {
    const body = await (await fetch(`${server.baseUrl}/status`)).text();
    expect(body).toMatch(
      new RegExp(
        `data-symbol="XRP"[^>]*data-demo="true"><th scope="row">XRP</th><td>[a-z]+</td><td>${DEMO_DATA_LABEL}</td>`,
      ),
    );
    expect(body).toMatch(
      /data-symbol="BTC"[^>]*data-demo="false"><th scope="row">BTC<\/th><td>[a-z]+<\/td><td>real market<\/td>/,
    );
  });

  it("the paid API marks the demo coin's reading only, and the movers rank the real coin only", async () => {
    const signals = (await (
      await fetch(`${server.baseUrl}/api/v1/signals?symbols=BTC,XRP&tf=1h`, { headers: { "x-api-key": apiKey } })
    ).json()) as { signals: Array<Record<string, unknown>> };
    expect(signals.signals.map((e) => [e.symbol, e.ok, e.demo])).toEqual([
      ["BTC", true, undefined],
      ["XRP", true, true],
    ]);
    const movers = (await (
      await fetch(`${server.baseUrl}/api/v1/movers?tf=1h`, { headers: { "x-api-key": apiKey } })
    ).json()) as { volume_leaders: Array<{ symbol: string }> };
    expect(movers.volume_leaders.map((m) => m.symbol)).toEqual(["BTC"]);
  });

  it(
    "the landing page's example comes from the real coin and " +
      "its headline from the public live record, real data only",
    async () => {
      const body = await (await fetch(`${server.baseUrl}/`)).text();
      const example = JSON.parse(
        body
          .match(/<pre class="code" tabindex="0" id="example-answer"><code>([\s\S]*?)<\/code><\/pre>/)![1]!
          .replaceAll("&quot;", '"'),
      ) as { signals: Array<Record<string, unknown>> };
      expect(example.signals[0]).toMatchObject({ symbol: "BTC", ok: true });
      expect(example.signals[0]).not.toHaveProperty("demo");
      expect(body).not.toContain('id="example-demo"');
      // The headline pools what /track-record shows everyone: the live record of real series only.
      const record = computeLiveRecord(await loadLiveInputs(server.db.handle), server.clock());
      expect(record.series.map((s) => s.symbol)).not.toContain("XRP");
      const trades = record.series.reduce((n, s) => n + s.live.trades.length, 0);
      if (trades === 0) expect(body).toContain("No live signal has ended yet");
      else expect(body).toMatch(new RegExp(`data-field="trades">${trades.toLocaleString("en-US")}<`));
    },
  );
});
