/**
 * Which failures mean "the database cannot be reached now" (answered 503 `unavailable` and
 * retried by the caller) rather than a fault of the request or of the code (500).
 */

/** postgres.js and Node's codes for a connection that failed, was cut, or was never made; and the link watch's. */
const CONNECTION_CODES = new Set([
  "DATABASE_UNREACHABLE",
  "DATABASE_SILENT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ERR_SOCKET_CLOSED",
]);

/**
 * True when `err` (or the driver error a query builder wrapped as its `cause`) is a lost or
 * refused database connection.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      // SQLSTATE class 08 (connection exception); 57P01-57P03: terminated, crash shutdown, cannot connect now.
      if (CONNECTION_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || /^57P0[123]$/.test(code)) return true;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
