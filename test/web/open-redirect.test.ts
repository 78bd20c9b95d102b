/**
 * Issue 23, item 4: `/signin?next=…` never sends a browser to another host, over real HTTP
 * against a real server. Each tricky `next` is tried both ways a member meets it: opening the
 * link while signed in (an immediate 303) and signing in through the form that carries it.
 * Every Location is resolved as a browser resolves it, against the page's own URL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { WebClient } from "../support/web-client.ts";

const MEMBER = { email: "redirect@example.test", password: "a long enough password 7" };

/** Inputs that once left the site or that browsers and parsers read differently. */
const TRICKY_NEXT = [
  "/.//evil.example/phish",
  "/..//evil.example/phish",
  "/a/..//evil.example",
  "//evil.example",
  "///evil.example",
  "/\\evil.example",
  "/\\/evil.example",
  "/%2F%2Fevil.example",
  "/%2f/evil.example",
  "/%5Cevil.example",
  "https:evil.example",
  "https://evil.example/",
  "http:/evil.example",
  "javascript:alert(1)",
  "/\t/evil.example",
  "/\n/evil.example",
  "/\r\n/evil.example",
  "\t//evil.example",
  "/ /evil.example",
];

let server: TestServer;
let member: WebClient;

beforeAll(async () => {
  server = await startTestServer({});
  const account = await server.account({ email: MEMBER.email });
  await setMemberPassword(server.db.handle, account.accountId, MEMBER.password, server.config.passwordHashCost);
  member = new WebClient(server.baseUrl);
  expect((await member.signIn(MEMBER.email, MEMBER.password)).status).toBe(303);
});
afterAll(async () => {
  await server?.close();
});

/** Where a browser on `page` goes with this Location header. */
function browserTarget(location: string | undefined, page: string): URL {
  expect(location).toBeDefined();
  return new URL(location!, page);
}

describe("sign-in redirect target", () => {
  it.each(TRICKY_NEXT)("GET /signin?next=%j while signed in stays on the site", async (next) => {
    const page = `/signin?next=${encodeURIComponent(next)}`;
    const res = await member.get(page);
    expect(res.status).toBe(303);
    const target = browserTarget(res.headers.location, server.baseUrl + page);
    expect(target.origin).toBe(server.baseUrl);
    expect(res.headers.location!.startsWith("//")).toBe(false);
    expect(res.headers.location).not.toMatch(/\\/);
  });

  // The form shares the check; a few inputs suffice (each sign-in costs a password hash).
  it.each(TRICKY_NEXT.slice(0, 4))("signing in with next=%j stays on the site", async (next) => {
    const res = await new WebClient(server.baseUrl).signIn(MEMBER.email, MEMBER.password, { next });
    expect(res.status).toBe(303);
    expect(browserTarget(res.headers.location, `${server.baseUrl}/signin`).origin).toBe(server.baseUrl);
    expect(res.headers.location).toBe("/account");
  });

  it("the reported link answers /account, and plain local paths are still followed", async () => {
    const reported = await member.get("/signin?next=/.//evil.example/phish");
    expect(reported.headers.location).toBe("/account");
    const local = await member.get(`/signin?next=${encodeURIComponent("/charts/BTC?tf=1h")}`);
    expect(local.headers.location).toBe("/charts/BTC?tf=1h");
  });
});
