#!/usr/bin/env node
// `npx signals …` from a checkout; runs on the project's Node 24 (native TypeScript).
import { runCli } from "./main.ts";

const code = await runCli(process.argv.slice(2));
if (code >= 0) process.exit(code);
