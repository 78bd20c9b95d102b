import { describe, expect, it } from "vitest";
import { BatchReloads } from "../../../src/market/batch-reloads.ts";

/** A load whose batches the test finishes by hand, recording what each batch read. */
function controlledLoad() {
  const batches: { symbols: string[]; finish: () => void; fail: (err: Error) => void }[] = [];
  const load = (symbols: string[]) =>
    new Promise<void>((resolve, reject) => {
      batches.push({ symbols: [...symbols].sort(), finish: resolve, fail: reject });
    });
  return { batches, load };
}

const settledState = async (p: Promise<void>) => {
  let state = "pending";
  p.then(
    () => (state = "resolved"),
    () => (state = "rejected"),
  );
  // Two turns of the microtask queue settle a promise already resolved.
  await Promise.resolve();
  await Promise.resolve();
  return state;
};

describe("batched coin reloads", () => {
  it(
    "reads every coin asked for during a batch in one next batch, and " +
      "settles each caller by a batch that started after its call",
    async () => {
      const { batches, load } = controlledLoad();
      const reloads = new BatchReloads(load);
      const first = reloads.reload(["AAA", "BBB"]);
      expect(batches.map((b) => b.symbols)).toEqual([["AAA", "BBB"]]);
      // Asked while the first batch runs: it may have read before the commit these wait for.
      const second = reloads.reload(["BBB", "CCC"]);
      const third = reloads.reload(["DDD"]);
      expect(batches).toHaveLength(1);
      batches[0]!.finish();
      await first;
      expect(await settledState(second)).toBe("pending");
      expect(batches.map((b) => b.symbols)).toEqual([
        ["AAA", "BBB"],
        ["BBB", "CCC", "DDD"],
      ]);
      batches[1]!.finish();
      await Promise.all([second, third]);
      expect(batches).toHaveLength(2);
    },
  );

  it("rejects the callers of a batch that failed, and the next call starts a new batch", async () => {
    const { batches, load } = controlledLoad();
    const reloads = new BatchReloads(load);
    const failing = reloads.reload(["AAA"]);
    batches[0]!.fail(new Error("store unreachable"));
    await expect(failing).rejects.toThrow("store unreachable");
    const again = reloads.reload(["AAA"]);
    expect(batches).toHaveLength(2);
    batches[1]!.finish();
    await again;
  });

  it("asks nothing of the store for no coins", async () => {
    const { batches, load } = controlledLoad();
    await new BatchReloads(load).reload([]);
    expect(batches).toHaveLength(0);
  });
});
