/**
 * Structured JSON logs (pino). Secrets never reach a log line: headers that carry them are
 * redacted by path, and nothing logs a raw key anywhere in the code.
 */
import { pino, type Logger } from "pino";

/** Creates the process logger writing JSON lines to stdout. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "signals" },
    redact: {
      paths: ['req.headers["x-api-key"]', "req.headers.authorization", "req.headers.cookie", "apiKey", "api_key", "token"],
      censor: "[redacted]",
    },
  });
}
