/**
 * The tamper-evident signal log: the hash is SHA-256 of the previous hash, a newline and the
 * canonical event; verifyChainLog accepts an intact log and names the first line of an edited,
 * removed, inserted or reordered event; `signals verify-log FILE` exits 0 / 1 with that line.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../../src/cli/main.ts";
import {
  type ChainEntry,
  type ChainedEventFields,
  canonicalEvent,
  chainHash,
  confirmedAtOf,
  formatChainLog,
  GENESIS_HASH,
  shortHash,
  verifyChainLog,
} from "../../../src/market/event-chain.ts";

const H = 3_600_000;
const base: ChainedEventFields[] = [
  { symbol: "BTC", tf: "1h", signal: "LONG", confirmedAt: 1_718_510_400_000 + H, price: 66123.4, defense: 65010.25 },
  {
    symbol: "ETH",
    tf: "4h",
    signal: "STRONG_SHORT",
    confirmedAt: 1_718_510_400_000 + 4 * H,
    price: 3512.5,
    defense: 3600,
  },
  { symbol: "BTC", tf: "1h", signal: "NONE", confirmedAt: 1_718_517_600_000 + H, price: 64990.1, defense: null },
  {
    symbol: "SOL",
    tf: "1d",
    signal: "LONG",
    confirmedAt: 1_718_496_000_000 + 24 * H,
    price: 0.00001234,
    defense: 0.0000115,
  },
];

function chain(events: readonly ChainedEventFields[]): ChainEntry[] {
  let prev = GENESIS_HASH;
  return events.map((e, i) => {
    const hash = chainHash(prev, e);
    const entry = { ...e, id: `${e.symbol}-${e.tf}-${i}`, prev, hash };
    prev = hash;
    return entry;
  });
}

describe("the chain's hash", () => {
  it(
    "is SHA-256 of the previous hash, a newline and the canonical " +
      "JSON array [symbol, tf, signal, confirmedAt, price, defense]",
    () => {
      const e = base[0]!;
      expect(canonicalEvent(e)).toBe('["BTC","1h","LONG",1718514000000,66123.4,65010.25]');
      const expected = createHash("sha256")
        .update(`${"0".repeat(64)}\n["BTC","1h","LONG",1718514000000,66123.4,65010.25]`)
        .digest("hex");
      expect(chainHash(GENESIS_HASH, e)).toBe(expected);
      expect(canonicalEvent(base[2]!)).toBe('["BTC","1h","NONE",1718521200000,64990.1,null]');
      expect(shortHash(expected)).toBe(expected.slice(0, 8));
    },
  );

  it("covers every field and the predecessor: changing any one changes the hash", () => {
    const e = base[0]!;
    const h = chainHash(GENESIS_HASH, e);
    for (const changed of [
      { ...e, symbol: "ETH" },
      { ...e, tf: "4h" },
      { ...e, signal: "STRONG_LONG" },
      { ...e, confirmedAt: e.confirmedAt + 1 },
      { ...e, price: 66123.41 },
      { ...e, defense: null },
    ]) {
      expect(chainHash(GENESIS_HASH, changed)).not.toBe(h);
    }
    expect(chainHash("1".repeat(64), e)).not.toBe(h);
  });

  it("confirms a signal at its candle's close", () => {
    expect(confirmedAtOf("4h", 0)).toBe(4 * H);
    expect(() => confirmedAtOf("2h", 0)).toThrow(RangeError);
  });
});

describe("verifyChainLog", () => {
  const good = formatChainLog(chain(base));
  const lines = good.trimEnd().split("\n");

  it("accepts the intact log and reports its head", () => {
    const entries = chain(base);
    expect(verifyChainLog(good)).toEqual({ ok: true, events: 4, head: entries[3]!.hash });
    expect(verifyChainLog("")).toEqual({ ok: true, events: 0, head: GENESIS_HASH });
  });

  it("names an edited event (its hash no longer matches its content)", () => {
    const edited = [...lines];
    edited[1] = edited[1]!.replace('"price":3512.5', '"price":3412.5');
    const verdict = verifyChainLog(edited.join("\n"));
    expect(verdict).toMatchObject({ ok: false, line: 2, id: "ETH-4h-1", events: 1 });
    expect(verdict.ok ? "" : verdict.reason).toContain("edited");
  });

  it("names the event after an edited one whose hash was recomputed too (its link breaks)", () => {
    const entries = chain(base);
    const forged = { ...entries[1]!, signal: "STRONG_LONG" };
    const rehashed = { ...forged, hash: chainHash(forged.prev, forged) };
    const verdict = verifyChainLog(formatChainLog([entries[0]!, rehashed, entries[2]!, entries[3]!]));
    expect(verdict).toMatchObject({ ok: false, line: 3, id: "BTC-1h-2" });
  });

  it("names the event after a removed one", () => {
    const verdict = verifyChainLog([lines[0], lines[2], lines[3]].join("\n"));
    expect(verdict).toMatchObject({ ok: false, line: 2, id: "BTC-1h-2", events: 1 });
    expect(verdict.ok ? "" : verdict.reason).toContain("removed");
  });

  it("names the first event of a reordered pair, and a removed first event", () => {
    expect(verifyChainLog([lines[0], lines[2], lines[1], lines[3]].join("\n"))).toMatchObject({
      ok: false,
      line: 2,
      id: "BTC-1h-2",
    });
    expect(verifyChainLog(lines.slice(1).join("\n"))).toMatchObject({ ok: false, line: 1, id: "ETH-4h-1", events: 0 });
  });

  it("names an unreadable line", () => {
    expect(verifyChainLog(`${lines[0]}\nnot json\n`)).toMatchObject({ ok: false, line: 2, id: null });
    expect(verifyChainLog(`${lines[0]!.replace('"price":66123.4', '"price":"66123.4"')}`)).toMatchObject({
      ok: false,
      line: 1,
    });
  });
});

describe("signals verify-log FILE", () => {
  const dir = mkdtempSync(join(tmpdir(), "verify-log-"));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const good = formatChainLog(chain(base));

  it("exits 0 on an intact log and 1 naming the first break, needing no database", async () => {
    const env = { DATA_DIR: join(dir, "no-such-data-dir") };
    const writes: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => writes.push(String(chunk)) > 0) as typeof process.stdout.write;
    try {
      expect(await runCli(["verify-log", file("good.jsonl", good)], env)).toBe(0);
      expect(writes.join("")).toContain("ok: 4 events");
      const lines = good.trimEnd().split("\n");
      expect(await runCli(["verify-log", file("removed.jsonl", [lines[0], lines[2], lines[3]].join("\n"))], env)).toBe(
        1,
      );
      expect(writes.join("")).toContain("broken at line 2 (event BTC-1h-2)");
      expect(
        await runCli(["verify-log", "--json", file("edited.jsonl", good.replace("66123.4", "66123.5"))], env),
      ).toBe(1);
      expect(JSON.parse(writes.at(-1)!)).toMatchObject({ ok: false, line: 1, id: "BTC-1h-0" });
    } finally {
      process.stdout.write = write;
    }
  });
});
