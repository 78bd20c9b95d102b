/**
 * One word for the unit (issue 24 item 9): what a member or an operator reads — the pages and
 * the CLI's help — says "Token", never "credit". The only exceptions are the names the
 * specification fixes for the API (DESIGN.md): `credits_left`, `insufficient_credits` and the
 * fixed `billing` text, which a page may quote as API field names.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession } from "../../src/accounts/sign-in/sessions.ts";
import { BILLING_TEXT } from "../../src/signals/service.ts";
import { SESSION_COOKIE } from "../../src/web/page-kit.ts";
import { runCli } from "../support/processes.ts";
import { createTestClock, startTestServer, type TestServer } from "../support/test-server.ts";

const CONTRACT_NAMES = [BILLING_TEXT, "credits_left", "insufficient_credits", "grant_credits", "pack_credits"];

/** The words a reader sees, with the contract's fixed names taken out. */
function creditWords(text: string): string[] {
  let rest = text;
  for (const name of CONTRACT_NAMES) rest = rest.split(name).join("");
  return [...rest.matchAll(/.{0,40}credit.{0,40}/gis)].map((m) => m[0]);
}

describe("the product's word for the unit", () => {
  let server: TestServer;
  let cookie: string;

  beforeAll(async () => {
    server = await startTestServer({ feed: true, clock: createTestClock(Date.now()) });
    const { accountId } = await server.account({ email: "word.member@example.test" });
    const { token } = await createSession(server.db.handle, accountId, server.clock(), server.config.sessionTtlMs);
    cookie = `${SESSION_COOKIE}=${token}`;
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it("catches the word it looks for", () => {
    expect(creditWords("Buy 5,000 credits")).toHaveLength(1);
    expect(creditWords(`"credits_left": 9999, "billing": "${BILLING_TEXT}"`)).toEqual([]);
  });

  it("no page says credit, signed out or signed in", async () => {
    const pages: Array<[string, boolean]> = [
      ["/", false],
      ["/pricing", false],
      ["/getting-started", false],
      ["/signin", false],
      ["/signup", false],
      ["/status", false],
      ["/track-record", false],
      ["/docs", false],
      ["/account", true],
      ["/account/key", true],
      ["/account/password", true],
      ["/charts", true],
      ["/watch", true],
    ];
    const found: Record<string, string[]> = {};
    for (const [path, member] of pages) {
      const res = await fetch(`${server.baseUrl}${path}`, { headers: member ? { cookie } : {}, redirect: "manual" });
      expect(res.status, path).toBeLessThan(400);
      const words = creditWords(await res.text());
      if (words.length > 0) found[path] = words;
    }
    expect(found).toEqual({});
  });

  it("the CLI's help says Token, never credit", async () => {
    const help = await runCli(["--help"], { ...process.env, LOG_LEVEL: "silent" });
    expect(help.stdout + help.stderr).toMatch(/Token/);
    expect(creditWords(help.stdout + help.stderr)).toEqual([]);
  }, 60_000);
});
