/**
 * The unit a per-address budget counts: one IPv4 address, or one IPv6 /64 (the block one
 * subscriber usually holds, so rotating through it buys no extra budget). Used by the web
 * pages' sign-in throttle and by the API's failed-key budget.
 */

/** IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses become their /64 prefix. */
export function normaliseAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail = ""] = address.toLowerCase().split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === "" ? [] : tail.split(":");
  const groups = address.includes("::")
    ? [...headGroups, ...Array(Math.max(0, 8 - headGroups.length - tailGroups.length)).fill("0"), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/**
 * The caller's address: the socket's peer, or behind a trusted proxy the last X-Forwarded-For
 * hop (the one our proxy appended; earlier hops are the client's to invent). At most 64
 * characters, since it keys budgets and log lines. Used by the access log, the API's failed-key
 * budget and the web pages' throttles alike.
 */
export function callerAddress(
  forwardedFor: string | readonly string[] | undefined,
  socketAddress: string | undefined,
  trustProxy: boolean,
): string {
  if (trustProxy) {
    const hops = (typeof forwardedFor === "string" ? forwardedFor : (forwardedFor ?? []).join(","))
      .split(",")
      .map((h) => h.trim())
      .filter(Boolean);
    if (hops.length > 0) return hops[hops.length - 1]!.slice(0, 64);
  }
  return socketAddress ?? "unknown";
}
