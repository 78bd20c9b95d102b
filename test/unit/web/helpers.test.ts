/**
 * The small pure pieces of the web pages: HTML escaping, the JSON data block, cookies, safe
 * redirect targets, client addresses behind a proxy or not, CSRF tokens, and MYT formatting.
 */
import { describe, expect, it } from "vitest";
import { maskedKey } from "../../../src/web/account-page.ts";
import { chartPath } from "../../../src/web/chart-page.ts";
import {
  doubleSubmitMatches,
  newCsrfCookieValue,
  originAllowed,
  sessionCsrfMatches,
  sessionCsrfToken,
} from "../../../src/web/csrf.ts";
import {
  formatDelta,
  formatIn,
  formatInteger,
  formatMyt,
  formatPercent,
  formatPrice,
} from "../../../src/web/format.ts";
import { escapeHtml, html, jsonScript } from "../../../src/web/html.ts";
import {
  clientAddress,
  normaliseAddress,
  ownOrigins,
  requestIsTls,
  safeLocalPath,
  type WebRequest,
} from "../../../src/web/http.ts";

/** Just enough of a request for the helpers that read headers and the socket. */
function fakeRequest(
  headers: Record<string, string>,
  socket: { remoteAddress?: string; encrypted?: boolean } = {},
): WebRequest {
  return { headers, socket } as unknown as WebRequest;
}

describe("html", () => {
  it("escapes every interpolated value, and nests fragments without escaping them twice", () => {
    const name = `<script>alert("x")</script> & 'quotes'`;
    const inner = html`<b>${name}</b>`;
    expect(html`<p title="${name}">${inner}</p>`.value).toBe(
      `<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ` +
        `&#39;quotes&#39;"><b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;</b></p>`,
    );
    expect(html`${[html`<i>a</i>`, "<b>", null, false, undefined, 3]}`.value).toBe("<i>a</i>&lt;b&gt;3");
    expect(escapeHtml("a&b")).toBe("a&amp;b");
  });

  it("writes JSON data blocks that cannot close their element and parse back to the same data", () => {
    const data = { text: "</script><script>alert(1)</script>", sep: "\u2028\u2029", n: [1.5, null] };
    const block = jsonScript("d", data).value;
    expect(block.startsWith('<script type="application/json" id="d">')).toBe(true);
    const body = block.slice(block.indexOf(">") + 1, block.lastIndexOf("</script>"));
    expect(body).not.toMatch(/<|\u2028|\u2029/);
    expect(JSON.parse(body)).toEqual(data);
  });
});

const SITE = "https://signals.example.test";

describe("cookies and redirects", () => {
  it("only plain local paths are redirect targets", () => {
    expect(safeLocalPath("/charts/BTC?tf=4h", SITE)).toBe("/charts/BTC?tf=4h");
    expect(safeLocalPath("/account", SITE)).toBe("/account");
    for (const bad of [
      "//evil.test",
      "https://evil.test/",
      "/\\evil.test",
      "javascript:alert(1)",
      "evil.test",
      "/a\nb",
      "",
      null,
      undefined,
      `/${"a".repeat(600)}`,
    ]) {
      expect(safeLocalPath(bad, SITE), String(bad)).toBeNull();
    }
  });

  // Issue 23, item 4: each of these either stays on the site or is refused; none may come out
  // as a path that a browser reads as another host.
  it.each([
    ["/.//evil.example/phish", null],
    ["/./evil", "/evil"],
    ["/a/..//evil.example", null],
    ["/..//evil.example", null],
    ["/\\evil", null],
    ["/\\/evil", null],
    ["//evil", null],
    ["///evil", null],
    ["/%2F%2Fevil", null],
    ["/%2f/evil", null],
    ["/%5Cevil", null],
    ["/%5c%5cevil", null],
    ["/%00evil", null],
    ["/%E0%A4%A", null],
    ["https:evil", null],
    ["https:/evil", null],
    ["http:evil", null],
    ["/\tevil", null],
    ["/\t/evil", null],
    ["/\n/evil", null],
    ["/\r\n/evil", null],
    ["/ /evil", null],
    ["/\u000b/evil", null],
    ["/\u007f/evil", null],
    ["\t//evil", null],
    [" /evil", null],
    ["/@evil.example", "/@evil.example"],
    ["/evil.example", "/evil.example"],
    ["/charts/BTC?next=//evil", "/charts/BTC?next=//evil"],
    ["/account#frag", "/account"],
    ["/%252F%252Fevil", "/%252F%252Fevil"],
    ["/caf\u00e9", "/caf%C3%A9"],
  ] as const)("safeLocalPath(%j) is %j and stays on the site", (raw, expected) => {
    const result = safeLocalPath(raw, SITE);
    expect(result).toBe(expected);
    if (result !== null) {
      // What a browser does with the Location header: resolve against the page's URL.
      expect(new URL(result, `${SITE}/signin?next=x`).origin).toBe(SITE);
      expect(result.startsWith("//") || result.includes("\\")).toBe(false);
    }
  });
});

describe("client address and TLS", () => {
  it("uses the socket address unless a trusted proxy names the client (its last X-Forwarded-For entry)", () => {
    const req = fakeRequest({ "x-forwarded-for": "6.6.6.6, 203.0.113.7" }, { remoteAddress: "10.0.0.2" });
    expect(clientAddress(req, false)).toBe("10.0.0.2");
    expect(clientAddress(req, true)).toBe("203.0.113.7");
    expect(clientAddress(fakeRequest({}, { remoteAddress: "::ffff:192.0.2.1" }), false)).toBe("192.0.2.1");
  });

  it("counts IPv6 clients per /64", () => {
    expect(normaliseAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(normaliseAddress("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(normaliseAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(normaliseAddress("::1")).toBe("0:0:0:0::/64");
    expect(normaliseAddress("127.0.0.1")).toBe("127.0.0.1");
  });

  it("believes X-Forwarded-Proto only from a trusted proxy", () => {
    const forwarded = fakeRequest({ "x-forwarded-proto": "https" });
    expect(requestIsTls(forwarded, false)).toBe(false);
    expect(requestIsTls(forwarded, true)).toBe(true);
    expect(requestIsTls(fakeRequest({}, { encrypted: true }), false)).toBe(true);
  });

  it("our origins are the configured public one and the one the request names", () => {
    expect(ownOrigins(fakeRequest({ host: "127.0.0.1:8080" }), "https://signals.example/", false)).toEqual([
      "https://signals.example",
      "http://127.0.0.1:8080",
    ]);
    expect(originAllowed(undefined, ["https://signals.example"])).toBe(true);
    expect(originAllowed("https://signals.example", ["https://signals.example"])).toBe(true);
    expect(originAllowed("https://evil.example", ["https://signals.example"])).toBe(false);
    expect(originAllowed("null", ["https://signals.example"])).toBe(false);
  });
});

describe("CSRF tokens", () => {
  it("a session's token matches only that session's secret", () => {
    const token = sessionCsrfToken("secret-one");
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessionCsrfMatches("secret-one", token)).toBe(true);
    expect(sessionCsrfMatches("secret-two", token)).toBe(false);
    expect(sessionCsrfMatches("secret-one", "")).toBe(false);
    expect(sessionCsrfMatches("secret-one", null)).toBe(false);
  });

  it("double submit: the field must equal a well-formed cookie", () => {
    const value = newCsrfCookieValue();
    expect(doubleSubmitMatches(value, value)).toBe(true);
    expect(doubleSubmitMatches(value, newCsrfCookieValue())).toBe(false);
    expect(doubleSubmitMatches(undefined, value)).toBe(false);
    expect(doubleSubmitMatches("short", "short")).toBe(false);
    expect(doubleSubmitMatches(value, null)).toBe(false);
  });
});

describe("formatting", () => {
  it("shows times in MYT (UTC+8)", () => {
    expect(formatMyt(Date.parse("2026-11-30T16:00:00Z"))).toBe("1 Dec 2026 00:00 MYT");
    expect(formatMyt(Date.parse("2026-11-15T04:05:00Z"))).toBe("15 Nov 2026 12:05 MYT");
    expect(formatIn(12 * 3_600_000)).toBe("in 12 h 0 min");
    expect(formatIn(3 * 86_400_000 + 4 * 3_600_000)).toBe("in 3 days 4 h");
    expect(formatIn(59_000)).toBe("in 1 min");
  });

  it("signs changes and percentages with a real minus sign", () => {
    expect(formatDelta(10_000)).toBe("+10,000");
    expect(formatDelta(-1)).toBe("\u22121");
    expect(formatPercent(1.234)).toBe("+1.23%");
    expect(formatPercent(-4.5)).toBe("\u22124.50%");
    expect(formatPercent(-0.001)).toBe("0.00%");
    expect(formatPercent(null)).toBe("\u2013");
    expect(formatPrice(64210.5)).toBe("64,210.50");
    expect(formatPrice(1.23456)).toBe("1.2346");
    expect(formatPrice(0.012345678)).toBe("0.01235");
  });

  it("writes numbers as Intl's en-US format does, without loading it on the pages", () => {
    const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
    const price = (v: number) =>
      Math.abs(v) >= 1000
        ? v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })
        : Math.abs(v) >= 1
          ? v.toLocaleString("en-US", { maximumFractionDigits: 4 })
          : v.toPrecision(4);
    const values = [0, -0, 0.5, 2.5, -2.5, -0.4, 999.995, 1000.005, 28555.015, 1.00005, 9.99995, 1e20, 1e21, NaN];
    let seed = 1;
    for (let i = 0; i < 2_000; i++) {
      seed = (seed * 16_807) % 2_147_483_647;
      values.push((seed / 2_147_483_647) * 10 ** ((seed % 25) - 4) * (seed % 3 === 0 ? -1 : 1));
      values.push(Math.round(seed / 13) / 200);
    }
    for (const v of values) {
      expect(formatInteger(v), String(v)).toBe(integer.format(v));
      expect(formatPrice(v), String(v)).toBe(price(v));
    }
  });

  it("masks a key after its display prefix, and builds the chart path the alerts link to", () => {
    expect(maskedKey("sig_live_AbCd")).toBe(`sig_live_AbCd${"\u2022".repeat(28)}`);
    expect(maskedKey("sig_live_AbCd")).not.toMatch(/sig_live_[0-9A-Za-z]{32}/);
    expect(chartPath("BTC", "4h")).toBe("/charts/BTC?tf=4h");
  });
});
