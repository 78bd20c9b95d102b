import { describe, expect, it } from "vitest";
import { errorSummary, redactSecrets } from "../../src/logger.ts";

describe("error summaries in logs", () => {
  it("keep the first line of a database error and drop its query parameters", () => {
    const params = Array.from({ length: 5000 }, (_, i) => `param-${i}`).join(", ");
    const err = Object.assign(new Error(`Failed query: INSERT INTO candles …\nparams: ${params}`), {
      name: "DrizzleQueryError",
      cause: Object.assign(new Error("duplicate key value violates unique constraint\nDETAIL: Key (symbol)=(BTC)"), {
        code: "23505",
      }),
    });
    const summary = errorSummary(err);
    expect(summary).toEqual({
      type: "DrizzleQueryError",
      message: "Failed query: INSERT INTO candles …",
      cause: "duplicate key value violates unique constraint",
    });
    expect(JSON.stringify(summary)).not.toContain("param-1");
  });

  it("cuts long messages and copes with non-errors", () => {
    expect(errorSummary(new Error("x".repeat(1000))).message).toHaveLength(300);
    expect(errorSummary("plain string")).toEqual({ type: "string", message: "plain string" });
    expect(errorSummary(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }))).toMatchObject({
      code: "ECONNREFUSED",
    });
  });
});

describe("redactSecrets", () => {
  it("masks API keys and long hex digests, and leaves other text as it is", () => {
    const digest = "ab".repeat(32);
    expect(redactSecrets(`/api/sig_live_Abc123xyz/${digest}?q=1`)).toBe("/api/sig_live_[redacted]/[redacted]?q=1");
    expect(redactSecrets(`malformed array literal: "${digest},x"`)).toBe('malformed array literal: "[redacted],x"');
    expect(redactSecrets("/api/v1/signals")).toBe("/api/v1/signals");
    expect(redactSecrets("short hex abcdef0123456789")).toBe("short hex abcdef0123456789");
  });
});
