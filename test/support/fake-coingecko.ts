/**
 * A fake CoinGecko API (root /api/v3) for one plan: demo (key in x-cg-demo-api-key) or pro
 * (x-cg-pro-api-key). It answers /coins/list and /coins/markets in CoinGecko's documented
 * shapes, refuses a key of the other plan with CoinGecko's 10010 / 10011 errors, and can
 * answer 429 (with Retry-After) a given number of times.
 */
import type { MarketRow } from "../../src/feeder/sources/fundamentals.ts";
import { type FakeHttp, json, startFakeHttp } from "./fake-http.ts";

/** A /coins/markets row: the fields the source reads plus a few it ignores. */
export type CoinGeckoMarket = MarketRow & { name: string; current_price: number };

export interface FakeCoinGecko extends FakeHttp {
  /** What the fake serves; change it in place. */
  readonly markets: CoinGeckoMarket[];
  /** The next n /coins/markets calls answer 429 with Retry-After: retryAfterSeconds. */
  rateLimitNext(n: number, retryAfterSeconds: number): void;
}

/** Starts the fake for `plan` with the one valid `key`. */
export async function startFakeCoinGecko(
  plan: "demo" | "pro",
  key: string,
  markets: CoinGeckoMarket[],
): Promise<FakeCoinGecko> {
  let limited = 0;
  let retryAfter = 1;
  const fake = await startFakeHttp((req) => {
    const demoKey = req.headers["x-cg-demo-api-key"];
    const proKey = req.headers["x-cg-pro-api-key"];
    if (plan === "demo" && proKey !== undefined)
      return json(400, {
        status: {
          error_code: 10010,
          error_message:
            "If you are using Pro API key, please change your root URL from api.coingecko.com to pro-api.coingecko.com",
        },
      });
    if (plan === "pro" && demoKey !== undefined)
      return json(400, {
        status: {
          error_code: 10011,
          error_message:
            "If you are using Demo API key, please change your root " +
            "URL from pro-api.coingecko.com to api.coingecko.com",
        },
      });
    const sent = plan === "demo" ? demoKey : proKey;
    if (sent !== key) return json(401, { status: { error_code: 10002, error_message: "API Key Missing" } });
    if (req.path === "/api/v3/coins/list")
      return json(
        200,
        markets.map((m) => ({ id: m.id, symbol: m.symbol, name: m.name })),
      );
    if (req.path === "/api/v3/coins/markets") {
      if (limited > 0) {
        limited--;
        return json(
          429,
          {
            status: {
              error_code: 429,
              error_message:
                "You've exceeded the Rate Limit. Please visit https://www.coingecko.com/en/api/pricing " +
                "to subscribe to our API plans for higher rate limits.",
            },
          },
          { "retry-after": String(retryAfter) },
        );
      }
      if (req.query.get("vs_currency") !== "usd") return json(400, { error: "invalid vs_currency" });
      const ids = (req.query.get("ids") ?? "").split(",");
      return json(
        200,
        markets
          .filter((m) => ids.includes(m.id))
          .sort((a, b) => (a.market_cap_rank ?? 1e9) - (b.market_cap_rank ?? 1e9)),
      );
    }
    return json(404, { error: "Not found" });
  });
  return {
    ...fake,
    markets,
    rateLimitNext(n: number, seconds: number) {
      limited = n;
      retryAfter = seconds;
    },
  };
}
