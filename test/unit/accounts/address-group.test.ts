/** The caller's address, one rule for the access log, the failed-key budget and the web throttles. */
import { describe, expect, it } from "vitest";
import { callerAddress, normaliseAddress } from "../../../src/accounts/address-group.ts";

describe("callerAddress", () => {
  it("ignores X-Forwarded-For unless the proxy is trusted", () => {
    expect(callerAddress("203.0.113.7", "10.0.0.2", false)).toBe("10.0.0.2");
    expect(callerAddress(undefined, undefined, false)).toBe("unknown");
  });

  it("takes the last hop behind a trusted proxy, from one header or several", () => {
    expect(callerAddress("198.51.100.1, 203.0.113.7 ", "10.0.0.2", true)).toBe("203.0.113.7");
    expect(callerAddress(["198.51.100.1", "2001:db8::1"], "10.0.0.2", true)).toBe("2001:db8::1");
    expect(callerAddress(" , ", "10.0.0.2", true)).toBe("10.0.0.2");
    expect(callerAddress("x".repeat(200), "10.0.0.2", true)).toHaveLength(64);
  });

  it("groups with the same IPv6 rule wherever the address is used", () => {
    expect(normaliseAddress(callerAddress("2001:db8:1:2:3:4:5:6", undefined, true))).toBe("2001:db8:1:2::/64");
  });
});
