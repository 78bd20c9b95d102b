/**
 * One paywall on every surface, as a table: plan × subscription state × surface → shown or
 * not, exercised through a real server over the wire: the paid endpoint over REST, Connect and
 * gRPC, the free movers over the same three, the live signal alert and the test alert through
 * a fake Telegram Bot API, the chart page, /track-record and /status over HTTP with each
 * viewer's own session (the free account is made by the real sign-up form).
 *
 * The market: ZZA on 1h, a hand-made falling zigzag whose engine signals are a SHORT (on the
 * candle 12 h in), then a STRONG_SHORT at every further break (21, 30, 39, 48 and 57 h in) and,
 * at the live close the test sends (60 h in), LONG with defense 142.5. With the clock just after
 * that close, the signal in force 24 h before is the STRONG_SHORT of 30 h: a viewer without
 * current access sees the two signals before it, never a later one, the LONG, its defense or
 * the levels; a paid member sees all seven and the levels.
 */

import { ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { MarketDataService } from "../../gen/signals/v1/market_data_pb.js";
import { Signal, SignalsService } from "../../gen/signals/v1/signals_pb.js";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { adjustTokens } from "../../src/billing/tokens.ts";
import type { Candle } from "../../src/engine/index.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { FAKE_BOT_TOKEN, type FakeTelegram, startFakeTelegram, webhookPost } from "../support/fake-telegram.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, WebClient, type WebResult } from "../support/web-client.ts";

const H = 3_600_000;
const BOT = "SignalsTableBot";
const WEBHOOK_SECRET = "entitlement-table-webhook-secret";
const PASSWORD = "a long and correct password";
const START = Date.UTC(2026, 10, 12);
const { history, breaker } = structureBreak(START);
/** Open times of the candles whose close set each stored signal. */
const SHORT_AT = START + 12 * H;
const STRONG_SHORTS_AT = [21, 30, 39, 48, 57].map((h) => START + h * H);
const LONG_AT = breaker.openTime;
const update = (c: Candle): CandleUpdate => ({ symbol: "ZZA", tf: "1h", ...c, closed: true });

type Refusal = "api_key_required" | "node_tier_required" | "subscription_inactive" | "insufficient_credits";

/** What one viewer gets on every surface. */
interface Expected {
  /** GetSignals over REST, Connect and gRPC: the current signal, or the refusal's code. */
  readonly paid: "signal" | Refusal;
  /** GetMovers over REST, Connect and gRPC: rows (never a signal), or the refusal's code. */
  readonly movers: "rows" | Refusal;
  /** The live LONG reaches the member's chat as an alert. */
  readonly alert: boolean;
  /** "Send a test alert" to a chat proven through /start. */
  readonly testAlert: "sent" | "not in plan" | "sign in";
  /** /charts/ZZA?tf=1h: the current signal and every event, the ended signals only, or sign-in. */
  readonly chart: "current" | "ended" | "sign in";
  /** /track-record and /status: public, the ended signals only, no current signal. */
  readonly trackRecord: "ended";
  readonly status: "no signal";
}

type Setup =
  | { readonly plan: string; readonly subscription: "active" | "lapsed"; readonly tokens?: 0 }
  | "sign-up"
  | "signed out";

const ENDED_ONLY = { trackRecord: "ended", status: "no signal" } as const;
/** The table, written out by hand from the product rule (docs/accounts.md, "Who sees what"). */
const TABLE: ReadonlyArray<readonly [string, Setup, Expected]> = [
  [
    "signed out",
    "signed out",
    {
      paid: "api_key_required",
      movers: "api_key_required",
      alert: false,
      testAlert: "sign in",
      chart: "sign in",
      ...ENDED_ONLY,
    },
  ],
  [
    "free sign-up (no payment, no key)",
    "sign-up",
    {
      paid: "api_key_required",
      movers: "api_key_required",
      alert: false,
      testAlert: "not in plan",
      chart: "ended",
      ...ENDED_ONLY,
    },
  ],
  [
    "basic, active",
    { plan: "basic", subscription: "active" },
    {
      paid: "node_tier_required",
      movers: "rows",
      alert: false,
      testAlert: "not in plan",
      chart: "ended",
      ...ENDED_ONLY,
    },
  ],
  [
    "node, lapsed",
    { plan: "node", subscription: "lapsed" },
    {
      paid: "subscription_inactive",
      movers: "subscription_inactive",
      alert: false,
      testAlert: "not in plan",
      chart: "ended",
      ...ENDED_ONLY,
    },
  ],
  [
    "founding_seat, lapsed",
    { plan: "founding_seat", subscription: "lapsed" },
    {
      paid: "subscription_inactive",
      movers: "subscription_inactive",
      alert: false,
      testAlert: "not in plan",
      chart: "ended",
      ...ENDED_ONLY,
    },
  ],
  [
    "node, active, 0 Tokens",
    { plan: "node", subscription: "active", tokens: 0 },
    { paid: "insufficient_credits", movers: "rows", alert: true, testAlert: "sent", chart: "current", ...ENDED_ONLY },
  ],
  [
    "node, active",
    { plan: "node", subscription: "active" },
    { paid: "signal", movers: "rows", alert: true, testAlert: "sent", chart: "current", ...ENDED_ONLY },
  ],
  [
    "founding_seat, active",
    { plan: "founding_seat", subscription: "active" },
    { paid: "signal", movers: "rows", alert: true, testAlert: "sent", chart: "current", ...ENDED_ONLY },
  ],
];

interface Viewer {
  readonly name: string;
  readonly expected: Expected;
  readonly web: WebClient;
  readonly apiKey: string | null;
  readonly accountId: number | null;
  /** The chat the viewer proved through /start (a distinct number per viewer). */
  readonly chatId: number;
}

let telegram: FakeTelegram;
let server: TestServer;
let transports: Record<"Connect" | "gRPC", Transport>;
const sessions: Http2SessionManager[] = [];
const viewers: Viewer[] = [];

async function signedInViewer(email: string, accountId: number): Promise<WebClient> {
  await setMemberPassword(server.db.handle, accountId, PASSWORD, server.config.passwordHashCost);
  const web = new WebClient(server.baseUrl);
  expect((await web.signIn(email, PASSWORD)).status).toBe(303);
  return web;
}

async function signUpViewer(email: string): Promise<{ web: WebClient; accountId: number }> {
  const web = new WebClient(server.baseUrl);
  const form = await web.get("/signup");
  const res = await web.post("/signup", {
    csrf_token: csrfTokenOf(form.body),
    email,
    password: PASSWORD,
    confirm: PASSWORD,
  });
  expect(res.status).toBe(200);
  expect((await web.signIn(email, PASSWORD)).status).toBe(303);
  const [row] = await server.db.handle.rows<{ id: string | number; plan: string; subscription_until: Date | null }>(
    sql`SELECT id, plan, subscription_until FROM accounts WHERE email = ${email}`,
  );
  expect(row).toMatchObject({ plan: "free", subscription_until: null });
  return { web, accountId: Number(row!.id) };
}

beforeAll(async () => {
  telegram = await startFakeTelegram();
  // The clock stands just after the LONG's close: that close is live, and alerts go out.
  server = await startTestServer({
    feed: true,
    clock: createTestClock(breaker.openTime + H + 5_000),
    env: {
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      TELEGRAM_BOT_USERNAME: BOT,
      TELEGRAM_UPDATES: "webhook",
      TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ALERT_RETRY_BASE_MS: "20",
      ALERT_RETRY_MAX_MS: "200",
    },
  });
  const grpcSession = new Http2SessionManager(server.baseUrl);
  sessions.push(grpcSession);
  transports = {
    Connect: createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    gRPC: createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: grpcSession }),
  };
  // History is a backfill: its events are stored, nobody is alerted.
  expect((await server.feed!.ingest(history.map(update), { alerts: false })).rejected).toBe(0);
  let n = 0;
  for (const [name, setup, expected] of TABLE) {
    const email = `viewer${++n}@example.test`;
    const chatId = 7_000 + n;
    if (setup === "signed out") {
      viewers.push({ name, expected, web: new WebClient(server.baseUrl), apiKey: null, accountId: null, chatId });
    } else if (setup === "sign-up") {
      const { web, accountId } = await signUpViewer(email);
      viewers.push({ name, expected, web, apiKey: null, accountId, chatId });
    } else {
      const until =
        setup.subscription === "active" ? new Date(server.clock() + 30 * 24 * H) : new Date(server.clock() - H);
      const { accountId, apiKey } = await server.account({ email, plan: setup.plan, subscriptionUntil: until });
      if (setup.tokens === 0)
        expect(
          await adjustTokens(
            server.db.handle,
            accountId,
            "adjustment",
            -server.config.limits.monthlyGrant,
            "empty for the test",
            server.config.limits,
          ),
        ).toBe("ok");
      viewers.push({ name, expected, web: await signedInViewer(email, accountId), apiKey, accountId, chatId });
    }
  }
}, 120_000);

afterAll(async () => {
  for (const s of sessions) s.abort();
  await server?.close();
  await telegram?.close();
});

const members = () => viewers.filter((v) => v.accountId !== null);

/** The machine code of a refused RPC (google.rpc.ErrorInfo reason). */
function reasonOf(err: unknown): string {
  if (!(err instanceof ConnectError)) throw err;
  return err.findDetails(ErrorInfoSchema)[0]?.reason ?? `no ErrorInfo (${err.code})`;
}

const headersOf = (v: Viewer): Record<string, string> => (v.apiKey === null ? {} : { "x-api-key": v.apiKey });

describe("alerts and test alerts", () => {
  /** Connects the viewer's chat as a member does: the Connect form, then `/start <token>` from that chat. */
  async function proveChat(v: Viewer): Promise<void> {
    const connect = await v.web.post("/account/telegram/connect", { csrf_token: await v.web.sessionCsrfToken() });
    expect(connect.status).toBe(303);
    const token = new RegExp(`^https://t\\.me/${BOT}\\?start=(.+)$`).exec(String(connect.headers.location))![1]!;
    const res = await webhookPost(
      `${server.baseUrl}/webhooks/telegram`,
      WEBHOOK_SECRET,
      telegram.injectMessage(v.chatId, `/start ${token}`),
    );
    expect(res.status).toBe(200);
  }

  async function sendTestAlert(v: Viewer): Promise<WebResult> {
    const csrf = v.accountId === null ? "none" : await v.web.sessionCsrfToken();
    return v.web.post("/account/telegram/test", { csrf_token: csrf });
  }

  const testAlertsTo = (chatId: number) =>
    telegram.received.filter((m) => m.chatId === String(chatId) && m.text.startsWith("Test alert"));

  it("a test alert goes only to a chat proven through /start, and only on a plan with alerts", async () => {
    for (const v of members()) {
      // First a typed chat id: no proof that it is the member's, so no test alert for anyone.
      const save = await v.web.post("/account/alerts", {
        csrf_token: await v.web.sessionCsrfToken(),
        chat_id: String(v.chatId + 100),
        symbols: "ZZA",
        timeframes: "1h",
      });
      expect(save.status, v.name).toBe(303);
      expect((await sendTestAlert(v)).status, v.name).toBe(v.expected.testAlert === "sent" ? 409 : 403);
      expect(testAlertsTo(v.chatId + 100), v.name).toEqual([]);
      // Then the one-tap connect: the chat is proven.
      await proveChat(v);
      const [row] = await server.db.handle.rows<{ chat_id: string; chat_verified: boolean }>(
        sql`SELECT chat_id, chat_verified FROM alert_settings WHERE account_id = ${v.accountId}`,
      );
      expect(row, v.name).toMatchObject({ chat_id: String(v.chatId), chat_verified: true });
    }
    for (const [name] of TABLE) {
      const v = viewers.find((x) => x.name === name)!;
      const res = await sendTestAlert(v);
      if (v.expected.testAlert === "sign in") {
        expect(res.status, name).toBe(303);
        expect(res.headers.location, name).toBe("/signin");
      } else if (v.expected.testAlert === "not in plan") {
        expect(res.status, name).toBe(403);
        expect(res.body, name).toContain("Alerts are not in your plan");
      } else {
        // The test alert is one direct sendMessage, answered before the redirect.
        expect(res.status, name).toBe(303);
        expect(testAlertsTo(v.chatId), name).toHaveLength(1);
      }
    }
    // Nothing went to a chat of a viewer whose plan has no alerts.
    for (const v of viewers.filter((x) => x.expected.testAlert !== "sent"))
      expect(testAlertsTo(v.chatId), v.name).toEqual([]);
    // The account page offers the button exactly where it works.
    for (const v of members())
      expect((await v.web.get("/account")).body.includes('id="telegram-test"'), v.name).toBe(
        v.expected.testAlert === "sent",
      );
  });

  it("the live signal is queued and delivered only to the members whose plan has alerts", async () => {
    const entitled = viewers.filter((v) => v.expected.alert);
    expect((await server.feed!.ingest([update(breaker)])).rejected).toBe(0);
    // The outbox rows are written in the candle's transaction: complete once ingest returns.
    const queued = await server.db.handle.rows<{ account_id: string }>(
      sql`SELECT account_id::text FROM outbox WHERE kind = 'signal_alert' ORDER BY account_id`,
    );
    expect(queued.map((r) => Number(r.account_id)).sort((a, b) => a - b)).toEqual(
      entitled.map((v) => v.accountId!).sort((a, b) => a - b),
    );
    const alertsOf = (v: Viewer) =>
      telegram.delivered.filter((m) => m.chatId === String(v.chatId) && m.eventId === `ZZA-1h-${LONG_AT}`);
    await telegram.waitForDelivered(telegram.delivered.filter((m) => m.eventId === null).length + entitled.length);
    for (const v of viewers) expect(alertsOf(v), v.name).toHaveLength(v.expected.alert ? 1 : 0);
  });
});

describe.each(["Connect", "gRPC", "REST"] as const)("the paid endpoint over %s", (protocol) => {
  it.each(TABLE.map(([name]) => [name]))("%s", async (name) => {
    const v = viewers.find((x) => x.name === name)!;
    let outcome: { signal: string; defense: number | null; confirmed: boolean } | string;
    if (protocol === "REST") {
      const res = await fetch(`${server.baseUrl}/api/v1/signals?symbols=ZZA&tf=1h`, { headers: headersOf(v) });
      const body = (await res.json()) as {
        ok: boolean;
        error?: string;
        signals?: Array<{ signal: string; defense: number | null; confirmed: boolean }>;
      };
      outcome = body.ok ? body.signals![0]! : body.error!;
    } else {
      try {
        const res = await createClient(SignalsService, transports[protocol]).getSignals(
          { symbols: "ZZA", tf: "1h" },
          { headers: headersOf(v) },
        );
        const entry = res.signals[0]!;
        outcome = { signal: Signal[entry.signal], defense: entry.defense ?? null, confirmed: entry.confirmed };
      } catch (err) {
        outcome = reasonOf(err);
      }
    }
    if (v.expected.paid === "signal")
      expect(outcome).toMatchObject({ signal: "LONG", confirmed: true, defense: 142.5 });
    else expect(outcome).toBe(v.expected.paid);
  });
});

describe.each(["Connect", "gRPC", "REST"] as const)("the free movers over %s: never a signal", (protocol) => {
  it.each(TABLE.map(([name]) => [name]))("%s", async (name) => {
    const v = viewers.find((x) => x.name === name)!;
    let outcome: { rows: Array<Record<string, unknown>>; text: string } | string;
    if (protocol === "REST") {
      const res = await fetch(`${server.baseUrl}/api/v1/movers?tf=1h&limit=50`, { headers: headersOf(v) });
      const text = await res.text();
      const body = JSON.parse(text) as {
        ok: boolean;
        error?: string;
        gainers?: object[];
        losers?: object[];
        volume_leaders?: object[];
      };
      outcome = body.ok
        ? { rows: [...body.gainers!, ...body.losers!, ...body.volume_leaders!] as Array<Record<string, unknown>>, text }
        : body.error!;
    } else {
      try {
        const res = await createClient(MarketDataService, transports[protocol]).getMovers(
          { tf: "1h", limit: "50" },
          { headers: headersOf(v) },
        );
        const rows = [...res.gainers, ...res.losers, ...res.volumeLeaders] as unknown as Array<Record<string, unknown>>;
        outcome = {
          rows,
          text: JSON.stringify(rows, (_k, value: unknown) => (typeof value === "bigint" ? String(value) : value)),
        };
      } catch (err) {
        outcome = reasonOf(err);
      }
    }
    if (v.expected.movers !== "rows") return expect(outcome).toBe(v.expected.movers);
    expect(typeof outcome).toBe("object");
    const { rows, text } = outcome as { rows: Array<Record<string, unknown>>; text: string };
    expect(rows.map((r) => r.symbol)).toContain("ZZA");
    for (const row of rows) expect(Object.keys(row)).not.toContain("signal");
    expect(text).not.toMatch(/LONG|SHORT/);
  });
});

/** The chart page's drawn data (the JSON block chart.js reads). */
function chartJson(body: string): { markers: Array<{ time: number; signal: string }>; levels: unknown } {
  return JSON.parse(/<script type="application\/json" id="chart-data">([\s\S]*?)<\/script>/.exec(body)![1]!) as never;
}
const MYT = 8 * 3600;
const markerTime = (ms: number) => ms / 1000 + MYT;

describe("the chart page", () => {
  it.each(TABLE.map(([name]) => [name]))("%s", async (name) => {
    const v = viewers.find((x) => x.name === name)!;
    // The live LONG was stored by the alerts test (it runs first, in file order).
    const res = await v.web.get("/charts/ZZA?tf=1h");
    if (v.expected.chart === "sign in") {
      expect(res.status).toBe(303);
      expect(res.headers.location).toMatch(/^\/signin/);
      return;
    }
    expect(res.status).toBe(200);
    const json = chartJson(res.body);
    const rows =
      (/<table id="history"[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(res.body)?.[1] ?? "").match(/<tr>/g)?.length ?? 0;
    if (v.expected.chart === "current") {
      expect(res.body).toContain('id="current-signal"');
      expect(res.body).toMatch(/<dt>Defense<\/dt><dd>142\.5<\/dd>/);
      expect(res.body).toContain("<dt>Arming</dt>");
      expect(json.levels).toEqual({ defense: 142.5, trigger: null, invalidation: null });
      expect(json.markers).toEqual([
        { time: markerTime(SHORT_AT), signal: "SHORT" },
        ...STRONG_SHORTS_AT.map((at) => ({ time: markerTime(at), signal: "STRONG_SHORT" })),
        { time: markerTime(LONG_AT), signal: "LONG" },
      ]);
      expect(rows).toBe(7);
      // The LONG closed the SHORT's trade: one trade in the backtest.
      expect(/id="backtest-trades">([^<]*)</.exec(res.body)![1]).toBe("1");
      expect(res.body).not.toContain('id="ended-only"');
    } else {
      expect(res.body).toContain('id="ended-only"');
      expect(res.body).not.toContain('id="levels"');
      expect(res.body).not.toContain('id="current-signal"');
      expect(res.body).not.toContain("<dt>Defense</dt>");
      expect(res.body).not.toContain("<dt>Arming</dt>");
      expect(json.levels).toBeNull();
      // Only the two signals that ended before the one in force 24 h ago began.
      expect(json.markers).toEqual([
        { time: markerTime(SHORT_AT), signal: "SHORT" },
        { time: markerTime(STRONG_SHORTS_AT[0]!), signal: "STRONG_SHORT" },
      ]);
      expect(rows).toBe(2);
      expect(/<table id="history"[\s\S]*?<\/table>/.exec(res.body)![0]).not.toContain("sig-long");
      // As of then the SHORT's trade was still open: no trade in the backtest yet.
      expect(/id="backtest-trades">([^<]*)</.exec(res.body)![1]).toBe("0");
    }
  });
});

describe("the public pages", () => {
  it.each(TABLE.map(([name]) => [name]))("/track-record and /status: %s", async (name) => {
    const v = viewers.find((x) => x.name === name)!;
    const record = await v.web.get("/track-record");
    expect(record.status).toBe(200);
    // The live record: the history was imported (no live signal) and the one live signal, the
    // LONG of the last close, is still in force, so for everyone ZZA has no row yet.
    expect(record.body).toContain('id="stated-costs"');
    expect(record.body).not.toContain('data-series="ZZA/1h"');
    expect(record.body).toContain("No live signal has been recorded yet.");
    const status = await v.web.get("/status");
    expect(status.status).toBe(200);
    expect(status.body).toContain('data-symbol="ZZA"');
    expect(status.body).not.toMatch(/LONG|SHORT|Long|Short|[Dd]efense|[Aa]rming/);
  });
});
