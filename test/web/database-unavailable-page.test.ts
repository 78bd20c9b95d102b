/**
 * The page a member gets while the database cannot be reached (src/web/app.ts): 503 with
 * `Retry-After: 5` and `x-error-code: unavailable`, never the 500 page. Its wording depends on
 * what was asked: a read (GET) is told that nothing changed; a form's sender (POST) is told that
 * the change may or may not have been saved, since the link can go silent after the commit.
 * The database is cut through a proxy (PostgreSQL only: an embedded database cannot be cut).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setMemberPassword } from "../../src/accounts/sign-in/credentials.ts";
import { migrateDb, openDb } from "../../src/db/client.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { createPostgresDatabase, type TestDb, usingPostgres } from "../support/test-db.ts";
import { startTestServer, type TestServer } from "../support/test-server.ts";
import { csrfTokenOf, WebClient, type WebResult } from "../support/web-client.ts";

const MEMBER = { email: "cut@example.test", password: "a long password for the cut" };
const READ_WORDING = "Nothing was changed";
const FORM_WORDING = "your change may or may not have been saved";

describe.skipIf(!usingPostgres)("the database-unavailable page (PostgreSQL)", () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  let proxy: TcpProxy;
  let db: TestDb;
  let server: TestServer;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    proxy = await startTcpProxy("127.0.0.1", Number(new URL(database.url).port || 5432));
    const handle = await openDb({ databaseUrl: proxy.urlFor(database.url), dataDir: "" });
    await migrateDb(handle);
    db = { handle, url: database.url, drop: () => handle.close() };
    server = await startTestServer({ db });
  });

  afterAll(async () => {
    await server?.close();
    await db?.drop();
    await proxy?.close();
    await database?.drop();
  });

  const expectUnavailablePage = (res: WebResult) => {
    expect(res.status, res.body.slice(0, 400)).toBe(503);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["retry-after"]).toBe("5");
    expect(res.headers["x-error-code"]).toBe("unavailable");
    expect(res.body).toContain("Temporarily unavailable");
  };

  it("tells a read that nothing changed, and a form's sender that the change may or may not be saved", async () => {
    const member = await server.account({ email: MEMBER.email });
    await setMemberPassword(db.handle, member.accountId, MEMBER.password, server.config.passwordHashCost);
    const reader = new WebClient(server.baseUrl);
    expect((await reader.signIn(MEMBER.email, MEMBER.password)).status).toBe(303);
    expect((await reader.get("/account")).status).toBe(200);
    const sender = new WebClient(server.baseUrl);
    const form = await sender.get("/signin");

    // The database goes away: open connections reset, new ones refused.
    await proxy.refuse();
    proxy.cutAll();

    const read = await reader.get("/account");
    expectUnavailablePage(read);
    expect(read.body).toContain(READ_WORDING);
    expect(read.body).not.toContain(FORM_WORDING);

    const sent = await sender.post("/signin", {
      csrf_token: csrfTokenOf(form.body),
      email: MEMBER.email,
      password: MEMBER.password,
    });
    expectUnavailablePage(sent);
    expect(sent.body).toContain(FORM_WORDING);
    expect(sent.body).not.toContain(READ_WORDING);

    // Back: the same pages work again (the server healed by itself).
    await proxy.accept();
    await expect.poll(async () => (await reader.get("/account")).status, { timeout: 60_000, interval: 100 }).toBe(200);
  });
});
