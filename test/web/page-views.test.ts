/**
 * The pace limit of the pages that show the current signal, over HTTP on two servers sharing
 * one database: PAGE_VIEWS_PER_MINUTE views per web session in a minute and PAGE_VIEWS_PER_DAY
 * per account in an MYT day, counted in the database, so a second server process or a second
 * session does not start afresh; past a budget the chart page is a 429 with Retry-After until
 * the window ends. A member without current access is never counted (their pages carry no
 * current signal), and simultaneous views are counted exactly.
 */

import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { nextMytMidnight } from "../../src/clock.ts";
import type { CandleUpdate } from "../../src/market/validate.ts";
import { structureBreak } from "../support/structure-break.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

const H = 3_600_000;
const PASSWORD = "a long and correct password";
const PER_MINUTE = 3;
const PER_DAY = 5;
const START = Date.UTC(2026, 10, 12);
const { history } = structureBreak(START);
/** 10 s into a minute, well inside an MYT day. */
const T0 = Date.parse("2026-11-15T04:00:10Z");

let first: TestServer;
let second: TestServer;
let n = 0;

async function member(
  plan: string,
): Promise<{ accountId: number; signIn: (server: TestServer) => Promise<WebClient> }> {
  const email = `pacer${++n}@example.test`;
  const { accountId } = await first.account({ email, plan });
  await setMemberPassword(first.db.handle, accountId, PASSWORD, first.config.passwordHashCost);
  return {
    accountId,
    async signIn(server) {
      const web = new WebClient(server.baseUrl);
      expect((await web.signIn(email, PASSWORD)).status).toBe(303);
      return web;
    },
  };
}

const view = (web: WebClient) => web.get("/charts/ZZA?tf=1h");

beforeAll(async () => {
  const clock = createTestClock(T0);
  const env = { PAGE_VIEWS_PER_MINUTE: String(PER_MINUTE), PAGE_VIEWS_PER_DAY: String(PER_DAY) };
  first = await startTestServer({ feed: true, clock, env });
  second = await startTestServer({ db: first.db, clock, env });
  const updates: CandleUpdate[] = history.map((c) => ({ symbol: "ZZA", tf: "1h", ...c, closed: true }));
  expect((await first.feed!.ingest(updates, { alerts: false })).rejected).toBe(0);
}, 60_000);

afterAll(async () => {
  await second?.close();
  await first?.close();
});

describe("page views of the current signal", () => {
  it("are limited per session per minute and per account per day, across server processes and sessions", async () => {
    first.clock.set(T0);
    const m = await member("node");
    const a = await m.signIn(first);
    const onSecond = new WebClient(second.baseUrl);
    for (const [name, value] of a.cookies) onSecond.cookies.set(name, value);
    // The same session, alternating between the two servers: three views, then the fourth is refused.
    expect((await view(a)).status).toBe(200);
    expect((await view(onSecond)).status).toBe(200);
    expect((await view(a)).status).toBe(200);
    const refused = await view(onSecond);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("50");
    expect(refused.body).toContain(`${PER_MINUTE} chart views a minute`);
    // Another session of the same account has its own minute, but the day is the account's: 5 views in all.
    const b = await m.signIn(second);
    expect((await view(b)).status).toBe(200);
    const day = await view(b);
    expect(day.status).toBe(429);
    expect(day.headers["retry-after"]).toBe(String(Math.ceil((nextMytMidnight(T0) - T0) / 1000)));
    expect(day.body).toContain(`${PER_DAY} chart views a day`);
    // The next minute does not refill the day; the next MYT day does.
    first.clock.set(T0 + 60_000);
    expect((await view(a)).status).toBe(429);
    first.clock.set(nextMytMidnight(T0) + 10_000);
    expect((await view(a)).status).toBe(200);
    expect((await view(b)).status).toBe(200);
  });

  it("counts simultaneous views exactly: 12 at once over two servers, 3 shown", async () => {
    first.clock.set(T0 + 2 * 24 * H);
    const web = await (await member("founding_seat")).signIn(first);
    const clients = [web, new WebClient(second.baseUrl)];
    for (const [name, value] of web.cookies) clients[1]!.cookies.set(name, value);
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => view(clients[i % 2]!).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(PER_MINUTE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(12 - PER_MINUTE);
  });

  it("never counts nor limits a member without current access (their pages show only ended signals)", async () => {
    first.clock.set(T0 + 4 * 24 * H);
    const m = await member("basic");
    const web = await m.signIn(first);
    for (let i = 0; i < PER_DAY + 2; i++) {
      const res = await view(web);
      expect(res.status).toBe(200);
      expect(res.body).toContain('id="ended-only"');
    }
    expect(
      await first.db.handle.rows(sql`SELECT 1 FROM page_view_windows WHERE view_key = ${`account:${m.accountId}`}`),
    ).toEqual([]);
  });
});
