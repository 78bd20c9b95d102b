/**
 * The REST handler context's request headers (NodeRequestHeaders) answer `get` and `has` from
 * Node's header object without filling a fetch Headers; they must answer exactly what a Headers
 * filled from that object (the handler's former `new Headers(headerPairs(req))`) answers, refuse
 * what it refuses, and behave as it does for every other method. Differential: random header
 * objects (edge whitespace, Latin-1, repeated set-cookie, NUL, characters beyond Latin-1).
 */
import { describe, expect, it } from "vitest";
import { headerPairs, NodeRequestHeaders } from "../../../src/server/rest.ts";
import { seededUniform } from "../../support/seeded-random.ts";

type Req = ConstructorParameters<typeof NodeRequestHeaders>[0];
const request = (headers: Record<string, string | string[]>) => ({ headers }) as unknown as Req;

const NAMES = ["x-api-key", "idempotency-key", "host", "set-cookie", "accept", "x-odd", ":path"];
const ASKED = [...NAMES, "X-Api-Key", "Idempotency-Key", "absent", "bad name", "", ":authority"];
const PIECES = ["a", "Z9", " ", "\t", ",", "\u00a0", "é", "sig_live_x", "\0", "\r", "\u0100", "\n"];

function outcome<T>(f: () => T): { value: T } | { error: string } {
  try {
    return { value: f() };
  } catch (err) {
    return { error: (err as Error).constructor.name };
  }
}

describe("NodeRequestHeaders", () => {
  it("answers and refuses as a Headers filled from Node's header object, over 20,000 random requests", () => {
    const uniform = seededUniform(2811);
    const pick = <T>(list: readonly T[]) => list[Math.floor(uniform() * list.length)]!;
    const text = () => Array.from({ length: Math.floor(uniform() * 5) }, () => pick(PIECES)).join("");
    for (let i = 0; i < 20_000; i++) {
      const headers: Record<string, string | string[]> = {};
      for (const name of NAMES) {
        if (uniform() < 0.4) continue;
        headers[name] = name === "set-cookie" ? [text(), text()] : text();
      }
      const req = request(headers);
      const made = outcome(() => new NodeRequestHeaders(req));
      const filled = outcome(() => new Headers(headerPairs(req)));
      expect("error" in made, JSON.stringify(headers)).toBe("error" in filled);
      if (!("value" in made) || !("value" in filled)) continue;
      for (const name of ASKED) {
        expect(
          outcome(() => made.value.get(name)),
          `get ${name} of ${JSON.stringify(headers)}`,
        ).toEqual(outcome(() => filled.value.get(name)));
        expect(
          outcome(() => made.value.has(name)),
          `has ${name}`,
        ).toEqual(outcome(() => filled.value.has(name)));
      }
    }
  });

  it("fills itself for every other method, then reads what it holds", () => {
    const req = request({ "x-api-key": " k1 ", "set-cookie": ["a=1", "b=2"], host: "example" });
    const headers = new NodeRequestHeaders(req);
    expect([...headers]).toEqual([...new Headers(headerPairs(req))]);
    headers.set("x-api-key", "k2");
    headers.append("accept", "text/plain");
    headers.delete("host");
    expect(headers.get("x-api-key")).toBe("k2");
    expect(headers.has("host")).toBe(false);
    expect(headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect([...headers.keys()]).toEqual(["accept", "set-cookie", "set-cookie", "x-api-key"]);
    const seen: string[] = [];
    headers.forEach((value, name, parent) => {
      expect(parent).toBe(headers);
      seen.push(`${name}=${value}`);
    });
    expect(seen).toEqual([...headers.entries()].map(([n, v]) => `${n}=${v}`));
    expect([...headers.values()]).toEqual(["text/plain", "a=1", "b=2", "k2"]);
  });
});
