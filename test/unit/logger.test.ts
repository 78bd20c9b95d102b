import { describe, expect, it } from "vitest";
import { errorSummary } from "../../src/logger.ts";

describe("error summaries in logs", () => {
  it("keep the first line of a database error and drop its query parameters", () => {
    const params = Array.from({ length: 5000 }, (_, i) => `param-${i}`).join(", ");
    const err = Object.assign(new Error(`Failed query: INSERT INTO candles …\nparams: ${params}`), {
      name: "DrizzleQueryError",
      cause: Object.assign(new Error("duplicate key value violates unique constraint\nDETAIL: Key (symbol)=(BTC)"), { code: "23505" }),
    });
    const summary = errorSummary(err);
    expect(summary).toEqual({ type: "DrizzleQueryError", message: "Failed query: INSERT INTO candles …", cause: "duplicate key value violates unique constraint" });
    expect(JSON.stringify(summary)).not.toContain("param-1");
  });

  it("cuts long messages and copes with non-errors", () => {
    expect(errorSummary(new Error("x".repeat(1000))).message).toHaveLength(300);
    expect(errorSummary("plain string")).toEqual({ type: "string", message: "plain string" });
    expect(errorSummary(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }))).toMatchObject({ code: "ECONNREFUSED" });
  });
});
