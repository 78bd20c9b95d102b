/** Which addresses a provider's redirect may send the feeder to (issue 23, item 8). */
import { describe, expect, it } from "vitest";
import { isPublicAddress } from "../../../src/feeder/sources/public-address.ts";

describe("isPublicAddress", () => {
  it.each(["8.8.8.8", "1.1.1.1", "151.101.1.69", "2606:4700::1111", "2a00:1450:4001:80b::200e"])(
    "%s is public",
    (address) => {
      expect(isPublicAddress(address)).toBe(true);
    },
  );

  it.each([
    "127.0.0.1",
    "127.255.0.9",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:8.8.8.8",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "2001::1",
    "2001:db8::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fec0::1",
    "ff02::1",
    "100::1",
    "4000::1",
    "localhost",
    "example.com",
    "",
  ])("%s is not", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});
