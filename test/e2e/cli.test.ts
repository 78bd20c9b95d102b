/**
 * The operator CLI as an operator runs it: `node src/cli/bin.ts …` in a child process, on a
 * fresh embedded data directory (default) or a fresh Postgres database (DATABASE_URL set).
 * The effects are checked through the CLI itself and through the REST endpoint of a real
 * server process on the same database.
 *
 * The tests of this file run in order and share one account and one server, because every
 * process start costs seconds (PGlite's first start initialises a cluster).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRequest } from "../support/api-request.ts";
import {
  type CliResult,
  childEnv,
  hasStackTrace,
  runCli,
  runServerToExit,
  type ServerProcess,
  startServerProcess,
} from "../support/processes.ts";
import { waitFor } from "../support/reliability.ts";
import { createPostgresDatabase, usingPostgres } from "../support/test-db.ts";
import { EVENT_WAIT_MS } from "../support/waits.ts";

const KEY_PATTERN = /^sig_live_[0-9A-Za-z]{36}$/;

type Json = Record<string, unknown>;

/** The single JSON object a --json command prints on stdout. */
function jsonOf(result: CliResult): Json {
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!) as Json;
}

/** A successful --json command: exit 0, nothing on stderr, one JSON object. */
function success(result: CliResult): Json {
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
  return jsonOf(result);
}

const callRest = (server: ServerProcess, apiKey: string) =>
  apiRequest(server.baseUrl, "/api/v1/signals?symbols=BTC&tf=1h", { key: apiKey });

describe(`signals CLI (${usingPostgres ? "Postgres" : "embedded PGlite"})`, () => {
  let dataDir: string;
  let dropDatabase: (() => Promise<void>) | null = null;
  let env: NodeJS.ProcessEnv;
  const servers: ServerProcess[] = [];
  const cli = (...args: string[]) => runCli(args, env);

  // Shared along the file: the first account and its current key.
  let accountId = 0;
  let apiKey = "";

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "signals-cli-test-"));
    if (usingPostgres) {
      const database = await createPostgresDatabase();
      dropDatabase = database.drop;
      env = childEnv({ DATABASE_URL: database.url });
    } else {
      // A new, empty data directory: the first command (no server runs yet) migrates it itself.
      env = childEnv({ DATA_DIR: dataDir });
    }
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await dropDatabase?.();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("account create --json prints one JSON object with the account id and a new sig_live_ key", async () => {
    const created = success(
      await cli("account", "create", "--email", "Operator.One@Example.test", "--plan", "node", "--json"),
    );
    expect(created.api_key).toMatch(KEY_PATTERN);
    expect(created.account_id).toEqual(expect.any(Number));
    expect(created.account_id as number).toBeGreaterThan(0);
    expect(created).toMatchObject({
      email: "Operator.One@Example.test",
      plan: "node",
      grant_balance: 10_000,
      tokens_left: 10_000,
    });
    // Only a short display prefix of the key is ever shown again.
    expect(created.key_prefix).toBe((created.api_key as string).slice(0, "sig_live_".length + 4));
    accountId = created.account_id as number;
    apiKey = created.api_key as string;
  });

  describe("with a server process on the same database", () => {
    let server: ServerProcess;

    beforeAll(async () => {
      server = await startServerProcess({
        ...env,
        PORT: "0",
        INTERNAL_PORT: "0",
        LOG_LEVEL: "info",
        DEMO_ACCOUNT: "false",
      });
      servers.push(server);
    });

    it("account show --json reports plan, subscription end, both buckets, credits left and calls today", async () => {
      const shown = success(await cli("account", "show", "--account", String(accountId), "--json"));
      expect(shown).toMatchObject({
        account_id: accountId,
        plan: "node",
        grant_balance: 10_000,
        pack_balance: 0,
        tokens_left: 10_000,
        calls_today: 0,
        key_prefix: apiKey.slice(0, 13),
      });
      expect(shown).not.toHaveProperty("api_key");
      // Default subscription: about one month from now, as an ISO 8601 UTC instant.
      const until = Date.parse(shown.subscription_until as string);
      expect(shown.subscription_until).toBe(new Date(until).toISOString());
      expect(until - Date.now()).toBeGreaterThan(27 * 86_400_000);
      expect(until - Date.now()).toBeLessThan(32 * 86_400_000);
    });

    it("tokens pack --amount 500 credits the pack bucket", async () => {
      const after = success(await cli("tokens", "pack", "--account", String(accountId), "--amount", "500", "--json"));
      expect(after).toMatchObject({
        account_id: accountId,
        grant_balance: 10_000,
        pack_balance: 500,
        tokens_left: 10_500,
      });
    });

    it("tokens adjust --delta -3 takes three Tokens, from the grant bucket first", async () => {
      const after = success(
        await cli("tokens", "adjust", "--account", String(accountId), "--delta", "-3", "--reason", "test", "--json"),
      );
      expect(after).toMatchObject({
        account_id: accountId,
        grant_balance: 9_997,
        pack_balance: 500,
        tokens_left: 10_497,
      });
    });

    it("key regenerate prints a new key; the old key is refused at once and the new one works", async () => {
      const before = await callRest(server, apiKey);
      expect(before).toMatchObject({ status: 200, body: { ok: true, credits_left: 10_496 } });

      const regenerated = success(await cli("key", "regenerate", "--account", String(accountId), "--json"));
      const newKey = regenerated.api_key as string;
      expect(newKey).toMatch(KEY_PATTERN);
      expect(newKey).not.toBe(apiKey);
      expect(regenerated).toMatchObject({
        account_id: accountId,
        tokens_left: 10_496,
        calls_today: 1,
        key_prefix: newKey.slice(0, 13),
      });

      expect(await callRest(server, apiKey)).toMatchObject({
        status: 401,
        body: { ok: false, error: "invalid_api_key" },
      });
      expect(await callRest(server, newKey)).toMatchObject({ status: 200, body: { ok: true, credits_left: 10_495 } });
      apiKey = newKey;
    });

    it("account create reaches the database the server uses, and the new key works on the server at once", async () => {
      const created = success(
        await cli("account", "create", "--email", "second@example.test", "--plan", "founding_seat", "--json"),
      );
      expect(created.account_id).not.toBe(accountId);
      if (!usingPostgres) {
        // The server holds the embedded data directory, so the CLI must have gone through its
        // internal listener: the server itself logged the creation. The line comes through the
        // server's stdout pipe, which may deliver it a moment after the CLI has its answer.
        const logged = (line: Record<string, unknown>) =>
          line.msg === "account created" && line.accountId === created.account_id && line.plan === "founding_seat";
        await waitFor(
          () => server.logs().some(logged) || null,
          EVENT_WAIT_MS,
          "the server's 'account created' log line",
        );
      }
      expect(await callRest(server, created.api_key as string)).toMatchObject({
        status: 200,
        body: { ok: true, tier: "node", credits_left: 9_999 },
      });
    });

    it(
      "rejects bad arguments with a non-zero exit, a one-line " +
        "reason, no stack trace, and a JSON error with --json",
      async () => {
        const id = String(accountId);
        const cases: Array<{ args: string[]; exit: number; error: string; reason: RegExp }> = [
          { args: ["account", "create", "--plan", "node"], exit: 2, error: "usage", reason: /--email is required/ },
          {
            args: ["account", "show", "--account", "abc"],
            exit: 2,
            error: "usage",
            reason: /--account must be a whole number/,
          },
          { args: ["frobnicate"], exit: 2, error: "usage", reason: /unknown command "frobnicate"/ },
          { args: ["account", "show", "--account", id, "--colour"], exit: 2, error: "usage", reason: /--colour/ },
          {
            args: ["subscription", "set", "--account", id, "--until", "not-a-date"],
            exit: 1,
            error: "bad_request",
            reason: /until must be an ISO 8601 date-time/,
          },
          {
            args: ["tokens", "pack", "--account", id, "--amount", "0"],
            exit: 1,
            error: "bad_request",
            reason: /amount must be between 1 and/,
          },
        ];
        // Every case with --json (stdout JSON, stderr reason); without --json, one case shows that
        // stdout stays empty (each process start costs over a second of CPU).
        const plainCases = [cases[4]!];
        const [json, plain] = await Promise.all([
          Promise.all(cases.map((c) => cli(...c.args, "--json"))),
          Promise.all(plainCases.map((c) => cli(...c.args))),
        ]);
        const checkStderr = (c: (typeof cases)[number], result: CliResult) => {
          const what = `signals ${c.args.join(" ")}`;
          expect(result.code, `${what}\n${result.stderr}`).toBe(c.exit);
          expect(hasStackTrace(result.stderr + result.stdout), what).toBe(false);
          const [first, ...rest] = result.stderr.split("\n");
          expect(first, what).toMatch(/^signals: /);
          expect(first, what).toMatch(c.reason);
          // Usage errors add the usage text after the reason; refused operations say one line only.
          if (c.error !== "usage") expect(rest.join("").trim(), what).toBe("");
        };
        for (const [i, c] of cases.entries()) {
          checkStderr(c, json[i]!);
          const body = jsonOf(json[i]!);
          expect(body, c.args.join(" ")).toEqual({
            ok: false,
            error: c.error,
            message: expect.stringMatching(c.reason),
          });
          expect(body.message as string).not.toContain("\n");
        }
        for (const [i, c] of plainCases.entries()) {
          checkStderr(c, plain[i]!);
          expect(plain[i]!.stdout, c.args.join(" ")).toBe("");
        }
        // None of the refused operations changed the account: same balance, still subscribed.
        expect(await callRest(server, apiKey)).toMatchObject({ status: 200, body: { ok: true, credits_left: 10_494 } });
      },
    );

    // PGlite is single-process: only the embedded data directory has an owner to defend.
    it.runIf(!usingPostgres)(
      "refuses to start a second server on the same data directory, with a clear message",
      async () => {
        const second = await runServerToExit({
          ...env,
          PORT: "0",
          INTERNAL_PORT: "0",
          LOG_LEVEL: "info",
          DEMO_ACCOUNT: "false",
        });
        expect(second.code).not.toBe(0);
        expect(second.code).not.toBeNull();
        expect(second.stderr).toContain(`data directory ${dataDir} is in use by process ${server.pid}`);
        expect(second.stderr.trim().split("\n")).toHaveLength(1);
        expect(hasStackTrace(second.stderr + second.stdout)).toBe(false);
        // The first server is unaffected.
        expect(await callRest(server, apiKey)).toMatchObject({ status: 200, body: { credits_left: 10_493 } });
      },
    );

    it(
      "migrate while the server runs goes through it (embedded) " + "or the database: nothing pending, exit 0",
      async () => {
        const [json, plain] = await Promise.all([cli("migrate", "--json"), cli("migrate")]);
        const result = success(json);
        expect(result).toMatchObject({ ok: true, migrated: true });
        expect(result.applied).toBe(result.shipped);
        expect(result.applied).toBeGreaterThan(20);
        expect(plain.code).toBe(0);
        expect(plain.stdout.trim()).toBe(`migrations applied: ${result.applied} of ${result.shipped}`);
      },
    );

    it(
      "token rotate refuses while INTERNAL_TOKEN is set (it " + "overrides the file): exit 2, the file unchanged",
      async () => {
        const refused = await runCli(["token", "rotate", "--json"], {
          ...env,
          INTERNAL_TOKEN: "an-operator-set-token-0123",
        });
        expect(refused.code).toBe(2);
        expect(jsonOf(refused)).toEqual({
          ok: false,
          error: "config",
          message: expect.stringMatching(/^INTERNAL_TOKEN is set in this environment and overrides the token file/),
        });
      },
    );

    it("subscription set to a past instant makes the key answer 403 subscription_inactive", async () => {
      const ended = success(
        await cli("subscription", "set", "--account", String(accountId), "--until", "2020-01-01T00:00:00Z", "--json"),
      );
      expect(ended).toMatchObject({ account_id: accountId, subscription_until: "2020-01-01T00:00:00.000Z" });
      expect(await callRest(server, apiKey)).toMatchObject({
        status: 403,
        body: { ok: false, error: "subscription_inactive" },
      });
    });
  });
});
