import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable } from "../../../src/db/connection-errors.ts";
import { DatabaseSilent, DatabaseUnreachable } from "../../../src/db/link-watch.ts";

const withCode = (code: string) => Object.assign(new Error(code), { code });

describe("which failures mean the database cannot be reached now (503, not 500)", () => {
  it.each([
    ["the link watch's refusal", new DatabaseUnreachable("down")],
    ["the link watch's cut", new DatabaseSilent("silent")],
    ["a refused connection", withCode("ECONNREFUSED")],
    ["postgres.js: a connection destroyed", withCode("CONNECTION_DESTROYED")],
    ["postgres.js: connect timeout", withCode("CONNECT_TIMEOUT")],
    ["SQLSTATE 08006 (connection failure)", withCode("08006")],
    ["SQLSTATE 57P01 (terminated by an administrator)", withCode("57P01")],
    ["a query builder's error wrapping one", new Error("Failed query", { cause: withCode("ECONNRESET") })],
  ])("%s: unavailable", (_, err) => expect(isDatabaseUnavailable(err)).toBe(true));

  it.each([
    ["a unique violation (23505)", withCode("23505")],
    ["a syntax error (42601)", withCode("42601")],
    ["a plain error", new Error("bug")],
    ["not an error", "text"],
    ["nothing", undefined],
  ])("%s: not", (_, err) => expect(isDatabaseUnavailable(err)).toBe(false));
});
