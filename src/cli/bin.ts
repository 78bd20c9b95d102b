#!/usr/bin/env node
// `npx signals …` from a checkout; runs on the project's Node 24 (native TypeScript).
// Node's on-disk compile cache (in the OS temp directory) keeps the stripped TypeScript and V8
// code of every module the CLI loads: about a quarter of each command's start-up.
// It is enabled before main.ts is imported, so everything but this file goes through it.
import { enableCompileCache } from "node:module";
import { resolveDrizzleQuickly } from "./drizzle-resolve-hook.ts";

// Commands that open the embedded database or write the token file keep them private, as the
// server does (src/server/private-files.ts).
process.umask(0o077);

// `signals feed` runs for days: it gets the V8 heap flags `npm start` gives the server (a small
// young generation, a heap grown in small steps), which keep its RSS near its live data rather
// than V8's default headroom (400 coins: bench/README.md, "One feeder on 400 coins"). V8 reads
// them only at start-up, so the process re-executes itself with them: same pid, same streams.
const FEEDER_V8_FLAGS = ["--max-semi-space-size=8", "--heap-growing-percent=10"];
if (
  process.argv[2] === "feed" &&
  !process.execArgv.some((f) => f.startsWith("--max-semi-space-size")) &&
  typeof process.execve === "function"
) {
  process.execve(process.execPath, [
    process.execPath,
    ...process.execArgv,
    ...FEEDER_V8_FLAGS,
    ...process.argv.slice(1),
  ]);
}
enableCompileCache();
resolveDrizzleQuickly();
const { runCli } = await import("./main.ts");

const code = await runCli(process.argv.slice(2));
if (code >= 0) process.exit(code);
