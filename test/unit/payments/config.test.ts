/**
 * The payments part of the configuration schema (src/config.ts): defaults (payments off), the Stripe settings, the API
 * base split into the client's host/port/protocol, the pack catalogue, and one-line refusals that
 * never echo a secret.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, parseTokenPacks } from "../../../src/config.ts";

const parsePaymentsConfig = (env: Record<string, string>) => loadConfig(env).payments;
const STRIPE = { STRIPE_SECRET_KEY: "sk_test_abcdefgh12345678", STRIPE_WEBHOOK_SECRET: "whsec_abcdefgh12345678" };

describe("payments configuration", () => {
  it("is off without STRIPE_SECRET_KEY, with the default catalogue and one day of grace", () => {
    const config = parsePaymentsConfig({});
    expect(config.stripe).toBeNull();
    expect(config.tokenPacks).toEqual([
      { id: "5000-usd", tokens: 5000, currency: "usd", unitAmount: 2500 },
      { id: "20000-usd", tokens: 20000, currency: "usd", unitAmount: 8000 },
    ]);
    expect(config.subscriptionGraceMs).toBe(24 * 3_600_000);
    expect(loadConfig({}).payments.stripe).toBeNull();
  });

  it("reads the Stripe settings; Stripe's own API by default", () => {
    const config = parsePaymentsConfig({
      ...STRIPE,
      STRIPE_PRICE_NODE: "price_1Node",
      STRIPE_PRICE_FOUNDING_SEAT: "price_1Seat",
      SUBSCRIPTION_GRACE_HOURS: "0",
    });
    expect(config.stripe).toMatchObject({
      secretKey: STRIPE.STRIPE_SECRET_KEY,
      webhookSecret: STRIPE.STRIPE_WEBHOOK_SECRET,
      apiBase: { host: "api.stripe.com", port: 443, protocol: "https", url: "https://api.stripe.com" },
      prices: { node: "price_1Node", founding_seat: "price_1Seat" },
      webhookToleranceS: 300,
    });
    expect(config.subscriptionGraceMs).toBe(0);
  });

  it("splits STRIPE_API_BASE into the client's host, port and protocol", () => {
    expect(parsePaymentsConfig({ ...STRIPE, STRIPE_API_BASE: "http://127.0.0.1:12111/" }).stripe!.apiBase).toEqual({
      host: "127.0.0.1",
      port: 12111,
      protocol: "http",
      url: "http://127.0.0.1:12111",
    });
    expect(parsePaymentsConfig({ ...STRIPE, STRIPE_API_BASE: "http://[::1]:8" }).stripe!.apiBase).toMatchObject({
      host: "::1",
      port: 8,
    });
    for (const bad of ["ftp://x", "not a url", "https://api.stripe.com/v1"]) {
      expect(() => parsePaymentsConfig({ ...STRIPE, STRIPE_API_BASE: bad })).toThrow(ConfigError);
    }
  });

  it("needs the webhook secret with the secret key, and never echoes a secret in its message", () => {
    expect(() => parsePaymentsConfig({ STRIPE_SECRET_KEY: STRIPE.STRIPE_SECRET_KEY })).toThrow(
      /STRIPE_WEBHOOK_SECRET is required/,
    );
    try {
      loadConfig({ STRIPE_SECRET_KEY: "sk_test with spaces inside" });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain("STRIPE_SECRET_KEY");
      expect((err as Error).message).not.toContain("with spaces inside");
      expect((err as Error).message).not.toContain("sk_test");
    }
  });

  it("parses TOKEN_PACKS and refuses malformed or duplicate entries", () => {
    expect(parseTokenPacks("100:myr:500, 2000:JPY:1200")).toEqual([
      { id: "100-myr", tokens: 100, currency: "myr", unitAmount: 500 },
      { id: "2000-jpy", tokens: 2000, currency: "jpy", unitAmount: 1200 },
    ]);
    for (const bad of [
      "5000",
      "5000:USD",
      "0:USD:100",
      "5000:US:100",
      "5000:USD:0",
      "5000:USD:1,5000:usd:2",
      "-1:USD:5",
    ]) {
      expect(() => parseTokenPacks(bad), bad).toThrow(ConfigError);
    }
    expect(() => loadConfig({ TOKEN_PACKS: "lots" })).toThrow(
      /^TOKEN_PACKS entry "lots" must be Tokens:CURRENCY:minor units/,
    );
    expect(() => loadConfig({ SUBSCRIPTION_GRACE_HOURS: "-1" })).toThrow(/SUBSCRIPTION_GRACE_HOURS/);
  });
});
