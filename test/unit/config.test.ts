import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import {
  API_KEY_PREFIX,
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  secretsEqual,
} from "../../src/accounts/api-key.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";

describe("configuration", () => {
  it("has the specification's defaults", () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.host).toBe("127.0.0.1");
    expect(config.internalHost).toBe("127.0.0.1");
    expect(config.databaseUrl).toBeNull();
    expect(config.limits).toEqual({ dailyCap: 2000, monthlyGrant: 10_000, lowBalancePct: 15, maxSymbols: 8 });
    expect(Object.isFrozen(config)).toBe(true);
  });
  it(
    "runs one server process on the embedded database and one " + "per core on Postgres, unless WORKERS says otherwise",
    () => {
      expect(loadConfig({}).workers).toBe(1);
      expect(loadConfig({ WORKERS: "1" }).workers).toBe(1);
      expect(loadConfig({ DATABASE_URL: "postgres://h/db" }).workers).toBe(availableParallelism());
      expect(loadConfig({ DATABASE_URL: "postgres://h/db", WORKERS: "3" }).workers).toBe(3);
      expect(loadConfig({}).workerRole).toBeNull();
      expect(loadConfig({ DATABASE_URL: "postgres://h/db", SIGNALS_WORKER_ROLE: "follower" }).workerRole).toBe(
        "follower",
      );
    },
  );
  it("receives Telegram updates by polling once the bot token and username are set, unless told otherwise", () => {
    expect(loadConfig({}).alerts).toMatchObject({
      telegramUpdates: "off",
      telegramBotUsername: null,
      telegramWebhookSecret: null,
    });
    expect(loadConfig({ TELEGRAM_BOT_TOKEN: "123456:abcdefgh" }).alerts.telegramUpdates).toBe("off");
    const bot = { TELEGRAM_BOT_TOKEN: "123456:abcdefgh", TELEGRAM_BOT_USERNAME: "@SignalsBot" };
    expect(loadConfig(bot).alerts).toMatchObject({ telegramUpdates: "polling", telegramBotUsername: "SignalsBot" });
    expect(loadConfig({ ...bot, TELEGRAM_UPDATES: "off" }).alerts.telegramUpdates).toBe("off");
    const secret = "0123456789abcdef_-";
    expect(loadConfig({ ...bot, TELEGRAM_UPDATES: "Webhook", TELEGRAM_WEBHOOK_SECRET: secret }).alerts).toMatchObject({
      telegramUpdates: "webhook",
      telegramWebhookSecret: secret,
    });
  });
  it("reads every limit from the environment", () => {
    const config = loadConfig({
      DAILY_CAP: "5",
      MONTHLY_GRANT: "100",
      LOW_BALANCE_PCT: "20",
      MAX_SYMBOLS: "3",
      PORT: "9000",
    });
    expect(config.limits).toEqual({ dailyCap: 5, monthlyGrant: 100, lowBalancePct: 20, maxSymbols: 3 });
    expect(config.port).toBe(9000);
  });
  it.each([
    [{ PORT: "eighty" }, /PORT/],
    [{ PORT: "70000" }, /PORT/],
    [{ DAILY_CAP: "-1" }, /DAILY_CAP/],
    [{ DAILY_CAP: "0" }, /DAILY_CAP/],
    [{ LOW_BALANCE_PCT: "101" }, /LOW_BALANCE_PCT/],
    [{ DATABASE_URL: "mysql://x" }, /DATABASE_URL/],
    [{ INTERNAL_TOKEN: "short" }, /INTERNAL_TOKEN/],
    [{ PORT: "9000", INTERNAL_PORT: "9000" }, /differ/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ HOST: "bad host" }, /HOST/],
    [{ WORKERS: "0", DATABASE_URL: "postgres://h/db" }, /WORKERS must be a whole number between 1 and 64/],
    [{ WORKERS: "two", DATABASE_URL: "postgres://h/db" }, /WORKERS/],
    [
      { WORKERS: "2" },
      /^WORKERS above 1 needs DATABASE_URL: the embedded database \(PGlite\) is opened by one process only$/,
    ],
    [{ SIGNALS_WORKER_ROLE: "boss" }, /SIGNALS_WORKER_ROLE/],
    [{ TELEGRAM_BOT_USERNAME: "no spaces bot" }, /TELEGRAM_BOT_USERNAME/],
    [{ TELEGRAM_UPDATES: "push" }, /TELEGRAM_UPDATES/],
    [{ TELEGRAM_UPDATES: "polling", TELEGRAM_BOT_TOKEN: "123456:abcdefgh" }, /TELEGRAM_BOT_USERNAME/],
    [
      { TELEGRAM_UPDATES: "webhook", TELEGRAM_BOT_TOKEN: "123456:abcdefgh", TELEGRAM_BOT_USERNAME: "SignalsBot" },
      /TELEGRAM_WEBHOOK_SECRET/,
    ],
    [{ TELEGRAM_WEBHOOK_SECRET: "short" }, /TELEGRAM_WEBHOOK_SECRET/],
  ])("refuses %o with a one-line reason", (env, reason) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(reason);
  });
});

describe("API keys", () => {
  it("have the recognisable prefix and at least 160 random bits", () => {
    const key = generateApiKey();
    expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(isWellFormedApiKey(key)).toBe(true);
    const body = key.slice(API_KEY_PREFIX.length);
    expect((body.length - 6) * Math.log2(62)).toBeGreaterThanOrEqual(160);
  });
  it("are unique and uniformly drawn (no character grossly over-represented)", () => {
    const keys = Array.from({ length: 2000 }, generateApiKey);
    expect(new Set(keys).size).toBe(keys.length);
    const counts = new Map<string, number>();
    // The random part only (the checksum's first digit is at most "4": 2^32 < 5·62^5).
    for (const key of keys)
      for (const ch of key.slice(API_KEY_PREFIX.length, -6)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (2000 * 30) / 62;
    for (const n of counts.values()) expect(Math.abs(n - expected)).toBeLessThan(expected * 0.3);
  });
  it("are stored as SHA-256 and shown only by a short prefix", () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + 8));
    expect(displayPrefix(key)).toBe(key.slice(0, API_KEY_PREFIX.length + 4));
  });
  it("reject odd shapes before any database work", () => {
    const key = generateApiKey();
    for (const bad of [
      "",
      `${key}x`,
      key.slice(0, -1),
      key.replace("sig_live_", "sig_test_"),
      `${key.slice(0, -1)}!`,
      ` ${key}`,
    ]) {
      expect(isWellFormedApiKey(bad)).toBe(false);
    }
  });
  it("compare secrets by value, in constant time over digests", () => {
    expect(secretsEqual("abc", "abc")).toBe(true);
    expect(secretsEqual("abc", "abd")).toBe(false);
    expect(secretsEqual("abc", "abcd")).toBe(false);
  });
});
