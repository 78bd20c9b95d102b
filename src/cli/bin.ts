#!/usr/bin/env node
// `npx signals …` from a checkout; runs on the project's Node 24 (native TypeScript).
// Node's on-disk compile cache (in the OS temp directory) keeps the stripped TypeScript and V8
// code of every module the CLI loads: about a quarter of each command's start-up (issue 16).
// It is enabled before main.ts is imported, so everything but this file goes through it.
import { enableCompileCache } from "node:module";
import { resolveDrizzleQuickly } from "./drizzle-resolve-hook.ts";

// Commands that open the embedded database or write the token file keep them private, as the
// server does (src/server/private-files.ts).
process.umask(0o077);
enableCompileCache();
resolveDrizzleQuickly();
const { runCli } = await import("./main.ts");

const code = await runCli(process.argv.slice(2));
if (code >= 0) process.exit(code);
