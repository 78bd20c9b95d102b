/**
 * `signals feed` runs with the V8 heap flags `npm start` gives the server (it re-executes itself
 * with them, keeping its pid), which keep a 400-coin feeder's RSS near 240 MiB instead of ~390
 * (bench/README.md, "One feeder on 400 coins"); a flag the operator gave wins.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { childEnv, NODE_BIN, PROJECT_ROOT } from "../support/processes.ts";
import { waitFor } from "../support/reliability.ts";
import { PROCESS_WAIT_MS } from "../support/waits.ts";

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);

describe.runIf(existsSync("/proc/self/cmdline"))("signals feed runtime", () => {
  const children: ReturnType<typeof spawn>[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
  });

  /** Starts a feeder and resolves with its command line once it has run its own code (its first log line). */
  async function feed(nodeFlags: string[]): Promise<string[]> {
    // Nothing answers on port 9: the feeder logs that it cannot load the exchange's markets and retries.
    const child = spawn(NODE_BIN, [...nodeFlags, "src/cli/bin.ts", "feed", "--symbols", "BTC"], {
      cwd: PROJECT_ROOT,
      env: childEnv({
        INTERNAL_TOKEN: "test-internal-token-0123456789",
        FEED_SERVER: "http://127.0.0.1:9",
        FEED_REST_URL: "http://127.0.0.1:9",
        FEED_WS_URL: "ws://127.0.0.1:9",
        FEED_METRICS_PORT: "0",
        LOG_LEVEL: "warn",
      }),
      stdio: ["ignore", "pipe", "ignore"],
    });
    children.push(child);
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    await waitFor(
      () => out.includes("could not load the exchange's markets"),
      PROCESS_WAIT_MS,
      "the feeder's first log line",
    );
    expect(child.exitCode).toBeNull();
    return cmdline(child.pid!);
  }

  it("re-executes itself with npm start's heap flags, keeping its pid", async () => {
    const args = await feed([]);
    expect(args).toEqual(
      expect.arrayContaining(["--max-semi-space-size=8", "--heap-growing-percent=10", "feed", "--symbols", "BTC"]),
    );
  });

  it("keeps a young-generation size the operator gave", async () => {
    const args = await feed(["--max-semi-space-size=4"]);
    expect(args).toContain("--max-semi-space-size=4");
    expect(args).not.toContain("--max-semi-space-size=8");
  });
});
