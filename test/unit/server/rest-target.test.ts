/**
 * The REST handler reads a plain request target (path letters, digits, "-_~/"; a printable query
 * without "#") by hand instead of with `new URL` (requestTarget). It must see the very path, the
 * very query parameters and the very URL the parser gives (requestUrl, which the handler used
 * before and still uses for every other target). Differential: named edge cases, then random
 * targets over an alphabet rich in what the parser rewrites (dots, escapes, backslashes, "?", "#").
 */
import { describe, expect, it } from "vitest";
import { requestTarget, requestUrl } from "../../../src/server/rest.ts";
import { seededUniform } from "../../support/seeded-random.ts";

/** What the handler reads of a target, through the URL parser. */
function parsed(target: string) {
  const url = requestUrl(target);
  if (url === null) return null;
  return {
    pathname: url.pathname,
    parameters: [...url.searchParams],
    hasQuery: url.search !== "",
    href: url.toString(),
  };
}

/** The same, through requestTarget. */
function read(target: string) {
  const t = requestTarget(target);
  if (t === null) return null;
  return {
    pathname: t.pathname,
    parameters: [...new URLSearchParams(t.search)],
    hasQuery: t.search !== "",
    href: t.href(),
  };
}

const NAMED = [
  "/api/v1/signals?symbols=BTC,ETH,SOL&tf=1h",
  "/api/v1/signals",
  "/api/v1/signals?",
  "/api/v1/signals??symbols=BTC",
  "/api/v1/signals?symbols=%42TC&tf=1h&tf=4h",
  "/api/v1/signals?symbols=a+b%20c&x",
  '/api/v1/signals?q="quoted"&r=<a>&s=\'',
  "/api/v1/../v1/signals?tf=1h",
  "/api/v1/./signals",
  "/api/v1/%73ignals",
  "/api\\v1\\signals",
  "/api/v1/signals#fragment?tf=1h",
  "/api/v1/signals?tf=1h#fragment",
  "/api/v1/sign als",
  "/api/v1/signals/",
  "/",
  "/?",
  "//api/v1/signals",
  "api/v1/signals",
  "*",
  "/é?symbols=é",
];

const ALPHABET = "abAZ09-_~/.?#%&=+\"'<> ,:;@!$()*[]{}|\\^`\u00e9";

describe("requestTarget", () => {
  it("reads the named targets as the URL parser does", () => {
    for (const target of NAMED) expect(read(target), target).toEqual(parsed(target));
  });

  it("takes the plain targets without the parser and refuses what requestUrl refuses", () => {
    expect(requestTarget("/api/v1/signals?symbols=BTC&tf=1h")).toMatchObject({
      pathname: "/api/v1/signals",
      search: "?symbols=BTC&tf=1h",
    });
    expect(requestTarget("//api/v1/signals")).toBeNull();
    expect(requestTarget("api/v1/signals")).toBeNull();
  });

  it("reads 100,000 random targets as the URL parser does", () => {
    const uniform = seededUniform(28_3);
    for (let i = 0; i < 100_000; i++) {
      let target = "/";
      const length = Math.floor(uniform() * 14);
      for (let j = 0; j < length; j++) target += ALPHABET[Math.floor(uniform() * ALPHABET.length)];
      const expected = parsed(target);
      const actual = read(target);
      if (JSON.stringify(actual) !== JSON.stringify(expected)) expect(actual, target).toEqual(expected);
    }
  });
});
