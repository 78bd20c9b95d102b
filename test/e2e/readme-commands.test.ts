/**
 * Every shell command of the README works as pasted. The README's ```sh blocks are parsed into
 * commands, and each one is either run exactly as printed by the scenario of
 * test/support/readme-commands.ts or excluded there with its reason (the internet, the Stripe
 * CLI, the suite itself): a new README command that is neither fails the first test.
 *
 * The second test runs the scenario in a copy of the project (the tracked files, node_modules
 * hard-linked) inside a network namespace of its own (`unshare -rn`), so the README's ports are
 * free whatever else runs on the machine and nothing can reach the internet: `npm install &&
 * npm start`, the curl / buf curl / TypeScript-free examples, the whole CLI list, the feeder
 * against a local fake Binance, the Telegram and Stripe starts against their local fakes.
 */
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { NODE_BIN, PROJECT_ROOT } from "../support/processes.ts";
import { EXCLUDED, flatSteps, readmeShellCommands, scenarioCommands } from "../support/readme-commands.ts";
import type { StepResult } from "../support/readme-runner.ts";

const README = readFileSync(path.join(PROJECT_ROOT, "README.md"), "utf8");
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A copy of the project as a fresh clone would have it, with the installed node_modules hard-linked. */
function projectCopy(): string {
  const root = mkdtempSync(path.join(tmpdir(), "readme-commands-"));
  dirs.push(root);
  const copy = path.join(root, "signals");
  mkdirSync(copy);
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    try {
      mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      copyFileSync(path.join(PROJECT_ROOT, file), path.join(copy, file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err; // a file deleted but not yet committed
    }
  }
  // Hard links: seconds instead of a minute of copying. `npm install` replaces files rather than
  // writing into them, except its own records, which are copied so the original stays as it is.
  // The directory itself, not a symbolic link to it (a git worktree's node_modules often is one):
  // cp -a copies a link as a link, `npm install` replaces that "non-directory" with a fresh install,
  // which in the namespace without a network never ends, and `npm start` is never ready.
  execFileSync("cp", ["-al", realpathSync(path.join(PROJECT_ROOT, "node_modules")), path.join(copy, "node_modules")]);
  for (const own of ["node_modules/.package-lock.json", "node_modules/.cache"]) {
    const target = path.join(copy, own);
    rmSync(target, { recursive: true, force: true });
    try {
      cpSync(path.join(PROJECT_ROOT, own), target, { recursive: true });
    } catch {
      /* not there */
    }
  }
  return copy;
}

describe("the README's shell commands", () => {
  it("each one is run by the scenario or excluded with a reason, and nothing else is listed", () => {
    const inReadme = readmeShellCommands(README);
    expect(inReadme.length).toBeGreaterThan(40);
    const covered = new Set([...scenarioCommands(), ...Object.keys(EXCLUDED)]);
    const uncovered = inReadme.filter((c) => !covered.has(c));
    expect(
      uncovered,
      "README commands the test neither runs nor excludes (add them to test/support/readme-commands.ts)",
    ).toEqual([]);
    const stale = [...covered].filter((c) => !inReadme.includes(c));
    expect(stale, "commands the test lists that the README no longer has").toEqual([]);
    for (const [command, reason] of Object.entries(EXCLUDED)) expect(reason.length, command).toBeGreaterThan(30);
    // The runner's results are looked up by command.
    expect(new Set(scenarioCommands()).size, "a command the scenario runs twice").toBe(scenarioCommands().length);
  });

  it("the parser keeps continuation lines and here-documents whole and skips comment lines", () => {
    const text = [
      "```sh",
      "# a comment",
      "a \\",
      "  b",
      "cat > f <<'X'",
      "line",
      "X",
      "c   # trailing",
      "```",
      "",
      "  ```sh",
      "  indented",
      "  ```",
    ].join("\n");
    expect(readmeShellCommands(text)).toEqual(["a \\\n  b", "cat > f <<'X'\nline\nX", "c   # trailing", "indented"]);
  });

  it(
    "each one the scenario runs works as printed, in a network namespace on the README's ports",
    async () => {
      const copy = projectCopy();
      const resultsFile = path.join(path.dirname(copy), "results.json");
      const runner = spawn(
        "unshare",
        [
          "--map-root-user",
          "--net",
          // The runner is the first process of a PID namespace: when it dies, even by SIGKILL, the kernel kills
          // every server and feeder it started; --kill-child kills the runner when unshare dies.
          "--pid",
          "--kill-child",
          NODE_BIN,
          path.join(PROJECT_ROOT, "test/support/readme-runner.ts"),
          copy,
          resultsFile,
        ],
        { cwd: PROJECT_ROOT, stdio: ["ignore", "pipe", "pipe"] },
      );
      let log = "";
      runner.stdout.setEncoding("utf8").on("data", (d: string) => (log += d));
      runner.stderr.setEncoding("utf8").on("data", (d: string) => (log += d));
      // A test that times out or fails leaves no runner behind (nor, through its PID namespace, its servers).
      onTestFinished(() => {
        if (runner.exitCode === null && runner.signalCode === null) runner.kill("SIGKILL");
      });
      const code = await new Promise<number | null>((resolve) => runner.on("close", (c) => resolve(c)));
      expect(code, `the runner failed:\n${log.slice(-4000)}`).toBe(0);
      const results = JSON.parse(readFileSync(resultsFile, "utf8")) as StepResult[];
      const byCommand = new Map(results.map((r) => [r.command, r]));
      for (const step of flatSteps()) {
        if (!("run" in step) && !("start" in step)) continue;
        const command = "run" in step ? step.run : step.start;
        const result = byCommand.get(command);
        expect(result, `not run: ${command}`).toBeDefined();
        const shown =
          `${command}\n--- exit ${result!.code}, stdout:\n${result!.stdout.slice(-3000)}\n--- ` +
          `stderr:\n${result!.stderr.slice(-3000)}`;
        if ("start" in step) {
          expect.soft(result!.ready, `${shown}\n${result!.error ?? ""}`).toBe(true);
          continue;
        }
        expect.soft(result!.code, shown).toBe(step.expect?.code ?? 0);
        for (const pattern of step.expect?.stdout ?? [])
          expect.soft(result!.stdout.trimEnd(), `${shown}\n--- expected ${pattern}`).toMatch(pattern);
      }
    },
    15 * 60_000,
  );
});
