/**
 * Which addresses the feeder may be sent to by a provider's redirect: public unicast only.
 * Loopback, private, link-local, carrier-grade NAT, documentation, benchmarking, multicast,
 * reserved, and the IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4, Teredo) are
 * refused, so a feed cannot point the feeder at the internal listener or the cloud's metadata
 * service.
 */
import { BlockList, isIP } from "node:net";

// Two lists: one BlockList checks IPv4 addresses against IPv6 rules as IPv4-mapped, so the
// `::ffff:0:0/96` rule would refuse every IPv4 address.
const NOT_PUBLIC_V4 = new BlockList();
const NOT_PUBLIC_V6 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  NOT_PUBLIC_V4.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 96], // unspecified, loopback and the deprecated IPv4-compatible form
  ["::ffff:0:0", 96], // IPv4-mapped
  ["64:ff9b::", 96], // NAT64 (well-known)
  ["64:ff9b:1::", 48], // NAT64 (local)
  ["100::", 64], // discard
  ["2001::", 32], // Teredo
  ["2001:2::", 48], // benchmarking
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const)
  NOT_PUBLIC_V6.addSubnet(network, prefix, "ipv6");

/** True when `address` (an IP literal) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  // IPv6 must also be in global unicast (2000::/3); everything else there is reserved.
  if (family === 6 && !/^[23][0-9a-f]{0,3}:/i.test(expandLeading(address))) return false;
  return family === 4 ? !NOT_PUBLIC_V4.check(address, "ipv4") : !NOT_PUBLIC_V6.check(address, "ipv6");
}

/** The first group of an IPv6 address written out (`::1` → `0:…`). */
function expandLeading(address: string): string {
  return address.startsWith("::") ? `0${address}` : address;
}
