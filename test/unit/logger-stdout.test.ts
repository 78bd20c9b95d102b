/**
 * The process logger's stdout: lines wait in 4 KB blocks before they are written, yet every
 * line reaches stdout exactly once when the process exits (a partial block included), and a
 * warning is written at once with the lines before it (a SIGKILL right after loses neither).
 * Order across a synchronous flush is not promised: a block whose asynchronous write is still
 * out when the process exits (or a warning flushes) lands after the lines written then.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { NODE_BIN, PROJECT_ROOT } from "../support/processes.ts";

/** Runs `body` in a fresh process with `logger` made by createLogger; its stdout lines, parsed. */
async function linesOf(body: string): Promise<{ lines: Record<string, unknown>[]; signal: string | null }> {
  const script = `import { createLogger } from "./src/logger.ts";\nconst logger = createLogger("info");\n${body}`;
  const child = spawn(NODE_BIN, ["--input-type=module", "-e", script], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  const signal = await new Promise<string | null>((resolve) => child.on("close", (_code, sig) => resolve(sig)));
  return {
    lines: out
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line)),
    signal,
  };
}

describe("the process logger's stdout", () => {
  it("writes every line exactly once when the process exits: full blocks and the partial one", async () => {
    const { lines } = await linesOf(`
      for (let i = 0; i < 1000; i++) {
        logger.info({ i, path: "/api/v1/signals" }, "request");
        if (i % 100 === 0) await new Promise((r) => setTimeout(r, 5));
      }
      process.exit(0);`);
    const numbers = lines.map((l) => l.i as number).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it("writes the lines of a process whose event loop just ends", async () => {
    const { lines } = await linesOf(`logger.info({ i: 0 }, "one"); logger.info({ i: 1 }, "two");`);
    expect(lines.map((l) => l.msg)).toEqual(["one", "two"]);
  });

  it("writes a partial block within its flush period, and nothing while idle", async () => {
    // Counts sonic-boom's writes (it calls fs.write through the shared module object).
    const { lines } = await linesOf(`
      // The flush timer is unref'd: this keeps the process up while it waits.
      setInterval(() => {}, 1000);
      const fs = (await import("node:fs")).default;
      let writes = 0;
      let firstDone;
      const firstWritten = new Promise((resolve) => (firstDone = resolve));
      const write = fs.write;
      fs.write = (...args) => {
        writes++;
        const done = args.at(-1);
        return write(...args.slice(0, -1), (...result) => { done(...result); firstDone(); });
      };
      logger.info({ i: 0 }, "partial block");
      await firstWritten;
      const before = writes;
      await new Promise((r) => setTimeout(r, 500));
      logger.info({ writesWhileIdle: writes - before }, "count");
      process.exit(0);`);
    expect(lines.map((l) => l.msg)).toEqual(["partial block", "count"]);
    // sonic-boom's own periodic flush wrote the empty buffer every 100 ms here.
    expect(lines[1]!.writesWhileIdle).toBe(0);
  });

  it("writes a line logged while a block's write is still out, without a later line or the exit", async () => {
    // fs.write completes 250 ms late (a slow pipe); line B is logged while line A's write is out.
    // The flush timer must write B once A's write is done; the process then waits for B's write
    // itself; on the old timer (it dropped its mark on a no-op flush) B never went out, and the
    // process gives up after 20 s (a bound for failing, not a pass condition) without B's line.
    const { lines } = await linesOf(`
      setTimeout(() => process.exit(3), 20_000);
      const fs = (await import("node:fs")).default;
      const write = fs.write;
      let writes = 0;
      let bWritten;
      const bOut = new Promise((resolve) => (bWritten = resolve));
      fs.write = (...args) => {
        const done = args.at(-1);
        const text = String(args[1]);
        return write(...args.slice(0, -1), (...result) =>
          setTimeout(() => {
            writes++;
            done(...result);
            if (text.includes('"B"')) bWritten();
          }, 250),
        );
      };
      logger.info({ line: "A" }, "first");
      await new Promise((r) => setTimeout(r, 150));
      logger.info({ line: "B" }, "second");
      await bOut;
      fs.write = write;
      logger.info({ writesBeforeExit: writes }, "done");
      process.exit(0);`);
    expect(lines.map((l) => l.line ?? l.msg)).toEqual(["A", "B", "done"]);
  }, 30_000);

  it("writes a warning and the lines before it at once: a SIGKILL right after loses none", async () => {
    const { lines, signal } = await linesOf(`
      logger.info({ i: 0 }, "before");
      logger.warn({ i: 1 }, "warning");
      process.kill(process.pid, "SIGKILL");`);
    expect(signal).toBe("SIGKILL");
    expect(lines.map((l) => l.msg)).toEqual(["before", "warning"]);
  });
});
