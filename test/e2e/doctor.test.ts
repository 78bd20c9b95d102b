/**
 * `signals doctor` end to end: a real server process, the CLI as an operator runs it, and the
 * outside services as local fakes reached through the real clients (the `stripe` library,
 * nodemailer's verify, the Bot API's getMe). A fresh embedded start is not ready to sell (demo
 * feed on, no Stripe, a loopback address) and says how to fix each; a configured server with a
 * fresh feed is ready (exit 0); each broken piece (a webhook endpoint without an event, a stale
 * coin, a wrong SMTP password, a wrong bot token, no server at all) is named with its fix and
 * makes the exit non-zero.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServerClient } from "../../src/feeder/server-client.ts";
import { STRIPE_WEBHOOK_EVENTS } from "../../src/payments/event-handlers.ts";
import { readInternalToken } from "../../src/server/internal-token.ts";
import { type FakeSmtp, startFakeSmtp } from "../support/fake-smtp.ts";
import { type FakeStripe, startFakeStripe } from "../support/fake-stripe.ts";
import { FAKE_BOT_TOKEN, FAKE_BOT_USERNAME, type FakeTelegram, startFakeTelegram } from "../support/fake-telegram.ts";
import { unpackMigratedTemplate } from "../support/migrated-pglite.ts";
import {
  type CliResult,
  childEnv,
  freePort,
  runCli,
  type ServerProcess,
  startServerProcess,
} from "../support/processes.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";

type Line = { name: string; status: string; detail: string; fix: string; needed: boolean };
const H = 3_600_000;
const PUBLIC = "https://signals.example.com";

function report(result: CliResult): { ok: boolean; checks: Line[]; byName: (name: string) => Line } {
  const body = JSON.parse(result.stdout) as { ok: boolean; checks: Line[] };
  return { ...body, byName: (name) => body.checks.find((c) => c.name === name) ?? ({} as Line) };
}

describe("signals doctor", () => {
  let stripe: FakeStripe;
  let smtp: FakeSmtp;
  let telegram: FakeTelegram;
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  const drops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    [stripe, smtp, telegram] = await Promise.all([startFakeStripe(), startFakeSmtp(), startFakeTelegram()]);
  });
  afterAll(async () => {
    for (const s of servers) await s.stop();
    for (const drop of drops) await drop();
    await Promise.all([stripe?.close(), smtp?.close(), telegram?.close()]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Server and CLI share this environment, as an operator's shell would. */
  async function environment(vars: Record<string, string>): Promise<NodeJS.ProcessEnv> {
    const dataDir = mkdtempSync(path.join(tmpdir(), "signals-doctor-"));
    dirs.push(dataDir);
    const base: Record<string, string> = {
      DATA_DIR: dataDir,
      PORT: "0",
      INTERNAL_PORT: String(await freePort()),
      LOG_LEVEL: "info",
      ...vars,
    };
    if (usingPostgres && vars.DEMO_FEED === "false") {
      const database = await createPostgresDatabase();
      drops.push(database.drop);
      base.DATABASE_URL = database.url;
    } else {
      // What the doctor checks does not depend on the migrations having run at this start.
      unpackMigratedTemplate(dataDir);
    }
    return childEnv(base);
  }

  it("a fresh embedded start is not ready: demo feed on, " +
    "no Stripe, a loopback address; each with its fix", async () => {
    const env = await environment({});
    const server = await startServerProcess(env);
    servers.push(server);
    // Both forms at once: the doctor only reads.
    const [result, text] = await Promise.all([runCli(["doctor", "--json"], env), runCli(["doctor"], env)]);
    expect(result.code, result.stderr).toBe(1);
    const { ok, byName } = report(result);
    expect(ok).toBe(false);
    expect(byName("internal token")).toMatchObject({ status: "ok", needed: true });
    expect(byName("server")).toMatchObject({ status: "ok" });
    expect(byName("database")).toMatchObject({ status: "ok" });
    expect(byName("database").detail).toMatch(/^reachable \(embedded PGlite\), (\d+) of \1 migrations applied$/);
    expect(byName("demo feed")).toMatchObject({
      status: "failing",
      needed: true,
      fix: "stop the server and start it with: DEMO_FEED=false npm start",
    });
    expect(byName("feed BTC")).toMatchObject({ status: "ok" });
    expect(byName("public address")).toMatchObject({ status: "failing" });
    expect(byName("stripe key")).toMatchObject({ status: "missing", needed: true });
    expect(byName("stripe key").fix).toMatch(/^STRIPE_SECRET_KEY=sk_live_… STRIPE_WEBHOOK_SECRET=whsec_… npm start/);
    expect(byName("smtp")).toMatchObject({ status: "missing", needed: false });
    expect(byName("telegram bot")).toMatchObject({ status: "missing", needed: false });
    // The text form: one line per check, the fix under it, the verdict last.
    expect(text.code).toBe(1);
    const demoCheck = "^failing demo feed +on: BTC, ETH, SOL, BNB and XRP get synthetic sample prices\\n";
    const demoFix = " +fix: stop the server and start it with: DEMO_FEED=false npm start$";
    expect(text.stdout).toMatch(new RegExp(demoCheck + demoFix, "m"));
    expect(text.stdout).toMatch(/^ok +database +reachable/m);
    expect(text.stdout.trim().split("\n").at(-1)).toBe(
      "not ready to sell: demo feed, public address, stripe key, stripe webhook secret",
    );
    await server.stop();
    servers.splice(servers.indexOf(server), 1);
    // With the server gone the doctor says so, and checks the database itself.
    const alone = report(await runCli(["doctor", "--json"], env));
    expect(alone.byName("server")).toMatchObject({ status: "failing", fix: "npm start" });
    expect(alone.byName("database")).toMatchObject({ status: "ok" });
  }, 120_000);

  it("a configured server with a live feed is ready to sell " +
    "(exit 0); each broken piece is named with its fix", async () => {
    stripe.webhookEndpoints.push({
      url: `${PUBLIC}/webhooks/stripe`,
      enabled_events: [...STRIPE_WEBHOOK_EVENTS],
      status: "enabled",
    });
    const env = await environment({
      DEMO_FEED: "false",
      DEMO_ACCOUNT: "false",
      PUBLIC_BASE_URL: PUBLIC,
      ...stripe.env(),
      SMTP_URL: smtp.url,
      MAIL_FROM: "Signals <no-reply@signals.example.com>",
      TELEGRAM_BOT_TOKEN: FAKE_BOT_TOKEN,
      TELEGRAM_BOT_USERNAME: FAKE_BOT_USERNAME,
      TELEGRAM_API_BASE: telegram.apiBase,
      TELEGRAM_UPDATES: "off",
      STALE_AFTER: "60",
    });
    const server = await startServerProcess(env);
    servers.push(server);
    // A feeder pushes BTC (20 closed hourly candles and a forming one), with the server's token.
    const feeder = createServerClient(server.internalUrl, readInternalToken(env.DATA_DIR!)!, "doctor-test");
    const last = Math.floor(Date.now() / H) * H;
    const candle = (i: number) => ({
      openTime: last - (20 - i) * H,
      open: 100 + i,
      high: 102 + i,
      low: 99 + i,
      close: 101 + i,
      volume: 10,
    });
    await feeder.acquireLeases(["BTC"], 10 * 60_000);
    const pushed = await feeder.push(
      Array.from({ length: 21 }, (_, i) => ({ symbol: "BTC", tf: "1h", candle: candle(i), closed: i < 20 })),
      "backfill",
    );
    feeder.close();
    expect(pushed.rejections).toEqual([]);

    const [ready, readyText] = await Promise.all([runCli(["doctor", "--json"], env), runCli(["doctor"], env)]);
    const good = report(ready);
    expect(
      good.checks.filter((c) => c.status !== "ok"),
      ready.stdout,
    ).toEqual([]);
    expect(ready.code).toBe(0);
    expect(good.byName("demo feed")).toMatchObject({ status: "ok", detail: "off" });
    expect(good.byName("feed BTC").detail).toMatch(/^last update \d+ s ago \(1h candles, led by feeder doctor-test\)$/);
    expect(good.byName("stripe key").detail).toBe("set (test mode: no real money moves)");
    expect(good.byName("stripe price node").detail).toBe("price_node_monthly: 49.00 USD every month");
    expect(good.byName("stripe webhook endpoint").detail).toBe(
      `${PUBLIC}/webhooks/stripe, all ${STRIPE_WEBHOOK_EVENTS.length} events`,
    );
    expect(good.byName("smtp").detail).toMatch(
      /^127\.0\.0\.1:\d+ accepts our login; mails come from Signals <no-reply@signals\.example\.com>$/,
    );
    expect(good.byName("telegram bot").detail).toBe(`@${FAKE_BOT_USERNAME}`);
    expect(readyText.stdout.trim().split("\n").at(-1)).toBe("ready to sell");
    // The Stripe checks went through Stripe's API (the stripe library against the fake).
    expect(stripe.calls.some((c) => c.method === "GET" && c.path === "/v1/webhook_endpoints")).toBe(true);
    expect(stripe.calls.some((c) => c.method === "GET" && c.path === "/v1/prices/price_node_monthly")).toBe(true);

    // An endpoint without one of the events: failing, and the fix names it.
    stripe.webhookEndpoints[0]!.enabled_events = STRIPE_WEBHOOK_EVENTS.filter((e) => e !== "charge.refunded");
    const noRefunds = report(await runCli(["doctor", "--json"], env));
    expect(noRefunds.ok).toBe(false);
    expect(noRefunds.byName("stripe webhook endpoint")).toMatchObject({
      status: "failing",
      detail: `${PUBLIC}/webhooks/stripe does not send charge.refunded`,
      fix: "add the events charge.refunded to it (Dashboard → Developers → Webhooks)",
    });
    stripe.webhookEndpoints.splice(0);
    const noEndpoint = report(await runCli(["doctor", "--json"], env));
    expect(noEndpoint.byName("stripe webhook endpoint").status).toBe("failing");
    expect(noEndpoint.byName("stripe webhook endpoint").fix).toContain(
      "stripe listen --forward-to 127.0.0.1:8080/webhooks/stripe",
    );
    await server.stop();
    servers.splice(servers.indexOf(server), 1);

    // Broken SMTP credentials and bot token, and a coin whose feed went quiet.
    const broken = {
      ...env,
      SMTP_URL: smtp.url.replace("smtp-test-password", "wrong-password"),
      TELEGRAM_BOT_TOKEN: "999:not-the-bot",
      STALE_AFTER: "1",
    };
    const restarted = await startServerProcess(broken);
    servers.push(restarted);
    const bad = await runCli(["doctor", "--json"], broken);
    expect(bad.code).toBe(1);
    const worse = report(bad);
    expect(worse.byName("smtp")).toMatchObject({
      status: "failing",
      needed: false,
      fix: "check SMTP_URL's host, port, user and password",
    });
    expect(worse.byName("smtp").detail).not.toContain("wrong-password");
    expect(worse.byName("telegram bot")).toMatchObject({
      status: "failing",
      detail: "getMe refused: HTTP 401: Unauthorized",
    });
    expect(worse.byName("feed BTC")).toMatchObject({
      status: "failing",
      fix: "npx signals feed --symbols BTC   (or look at the running feeder's 127.0.0.1:9464/healthz)",
    });
    expect(worse.byName("feed BTC").detail).toMatch(/: answered stale$/);
  }, 180_000);
});
