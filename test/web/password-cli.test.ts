/**
 * `signals account password` as an operator runs it, in child processes: the password read from
 * standard input (in-process AdminService, no server), refused input changing nothing, then a
 * real server process on the same database, where the member signs in, and where `--link`
 * (through the server's internal listener on the embedded database) prints a one-time setup
 * link under PUBLIC_BASE_URL that works once. Setting a password signs out the member's sessions.
 *
 * The tests of this file run in order and share one account and one server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unpackMigratedTemplate } from "../support/migrated-pglite.ts";
import {
  type CliResult,
  childEnv,
  runCli,
  runCliWithInput,
  type ServerProcess,
  startServerProcess,
} from "../support/processes.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { csrfTokenOf, WebClient } from "../support/web-client.ts";

const PUBLIC_BASE_URL = "https://signals.example.test";
const EMAIL = "cli.member@example.test";
const FIRST_PASSWORD = "first password from stdin";
const LINK_PASSWORD = "password chosen on the link page";

type Json = Record<string, unknown>;

function jsonOf(result: CliResult): Json {
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!) as Json;
}

describe(`signals account password (${usingPostgres ? "Postgres" : "embedded PGlite"})`, () => {
  let dataDir: string;
  let dropDatabase: (() => Promise<void>) | null = null;
  let env: NodeJS.ProcessEnv;
  let server: ServerProcess | null = null;
  let accountId = 0;
  let linkSession: WebClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "signals-password-cli-"));
    if (usingPostgres) {
      const database = await createPostgresDatabase();
      dropDatabase = database.drop;
      env = childEnv({ DATABASE_URL: database.url, PUBLIC_BASE_URL });
    } else {
      unpackMigratedTemplate(dataDir);
      env = childEnv({ DATA_DIR: dataDir, PUBLIC_BASE_URL });
    }
    const created = await runCli(["account", "create", "--email", EMAIL, "--plan", "node", "--json"], env);
    expect(created.code, created.stderr).toBe(0);
    accountId = jsonOf(created).account_id as number;
  });

  afterAll(async () => {
    await server?.stop();
    await dropDatabase?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("refuses a password under 10 characters, an empty standard input and an unknown account", async () => {
    const short = await runCliWithInput(
      ["account", "password", "--account", String(accountId), "--json"],
      env,
      "too short\n",
    );
    expect(short.code).toBe(1);
    expect(jsonOf(short)).toMatchObject({ ok: false, error: "bad_request" });
    expect(short.stderr).toContain("at least 10 characters");
    const empty = await runCliWithInput(["account", "password", "--account", String(accountId), "--json"], env, "");
    expect(empty.code).toBe(2);
    expect(jsonOf(empty)).toMatchObject({ ok: false, error: "usage" });
    expect(empty.stderr).toContain("no password on standard input");
    const unknown = await runCliWithInput(
      ["account", "password", "--account", "999999", "--json"],
      env,
      `${FIRST_PASSWORD}\n`,
    );
    expect(unknown.code).toBe(1);
    expect(jsonOf(unknown)).toMatchObject({ ok: false, error: "not_found" });
  });

  it("sets the password from standard input (first line only) and never echoes it", async () => {
    const set = await runCliWithInput(
      ["account", "password", "--account", String(accountId), "--json"],
      env,
      `${FIRST_PASSWORD}\nsecond line ignored\n`,
    );
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" });
    expect(jsonOf(set)).toMatchObject({ account_id: accountId, email: EMAIL, sessions_revoked: 0 });
    expect(set.stdout).not.toContain(FIRST_PASSWORD);
  });

  it("lets the member sign in on a server process with that password (and not with the refused ones)", async () => {
    server = await startServerProcess({
      ...env,
      PORT: "0",
      INTERNAL_PORT: "0",
      LOG_LEVEL: "info",
      DEMO_ACCOUNT: "false",
      DEMO_FEED: "false",
    });
    expect((await new WebClient(server.baseUrl).signIn(EMAIL, "too short")).status).toBe(401);
    const member = new WebClient(server.baseUrl);
    expect((await member.signIn(EMAIL, FIRST_PASSWORD)).status).toBe(303);
    const page = await member.get("/account");
    expect(page.status).toBe(200);
    expect(page.body).toContain(EMAIL);
  });

  it(
    "--link prints a one-time setup link under PUBLIC_BASE_URL " +
      "(through the running server on the embedded database)",
    async () => {
      const before = Date.now();
      const made = await runCli(["account", "password", "--account", String(accountId), "--link", "--json"], env);
      expect({ code: made.code, stderr: made.stderr }).toEqual({ code: 0, stderr: "" });
      const result = jsonOf(made);
      const link = new URL(result.setup_link as string);
      expect(link.origin).toBe(PUBLIC_BASE_URL);
      expect(link.pathname).toBe("/setup-password");
      expect(link.searchParams.get("token")).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const expires = Date.parse(result.expires_at as string);
      expect(expires - before).toBeGreaterThan(24 * 3600_000 - 60_000);
      expect(expires - before).toBeLessThanOrEqual(24 * 3600_000 + 60_000);

      // The member opens it on the real server (same path and query) and chooses a password.
      const client = new WebClient(server!.baseUrl);
      const form = await client.openPasswordLink(link.pathname + link.search);
      expect(form.status).toBe(200);
      expect(form.body).toContain(EMAIL);
      const done = await client.post("/setup-password", {
        csrf_token: csrfTokenOf(form.body),
        password: LINK_PASSWORD,
        confirm: LINK_PASSWORD,
      });
      expect(done.status).toBe(303);
      expect((await client.get(link.pathname + link.search)).status).toBe(404);
      expect((await new WebClient(server!.baseUrl).signIn(EMAIL, FIRST_PASSWORD)).status).toBe(401);
      linkSession = new WebClient(server!.baseUrl);
      expect((await linkSession.signIn(EMAIL, LINK_PASSWORD)).status).toBe(303);
    },
  );

  it("setting a password again signs out the member's web sessions", async () => {
    expect((await linkSession.get("/account")).status).toBe(200);
    const set = await runCliWithInput(
      ["account", "password", "--account", String(accountId)],
      env,
      `${FIRST_PASSWORD}\n`,
    );
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" });
    expect(set.stdout).toContain("Web password set; 1 web session(s) signed out.");
    expect((await linkSession.get("/account")).status).toBe(303);
    expect((await new WebClient(server!.baseUrl).signIn(EMAIL, FIRST_PASSWORD)).status).toBe(303);
  });

  it("prints the link in plain text without --json", async () => {
    const made = await runCli(["account", "password", "--account", String(accountId), "--link"], env);
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(
      new RegExp(
        String.raw`Password setup link \(works once, until \d{4}-\d{2}-\d{2}T[\d:.]+Z; ` +
          String.raw`send it to the member privately\):\n` +
          String.raw` {2}https://signals\.example\.test/setup-password\?token=[A-Za-z0-9_-]{43}\n`,
      ),
    );
  });
});
