// `npm audit --omit=dev` when the advisory service answers (issue 23, item 12). Prints the
// result and writes it to the file named by the first argument. Exit 1 only for a high or
// critical advisory against a runtime dependency; an unreachable service is recorded and is
// never a failure (the machines that run CI may have no route to it).
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const out = process.argv[2] ?? "npm-audit.json";
const run = spawnSync("npm", ["audit", "--omit=dev", "--json"], { encoding: "utf8", timeout: 60_000 });
let report = null;
try {
  report = JSON.parse(run.stdout);
} catch {
  // not JSON: the service or the network failed
}
const counts = report?.metadata?.vulnerabilities;
if (!counts) {
  const why =
    (report?.message || report?.error?.summary || run.error?.message || run.stderr || "no answer")
      .toString()
      .split("\n")
      .find((l) => l.trim()) ?? "no answer";
  const record = { at: new Date().toISOString(), reachable: false, reason: why.trim().slice(0, 300) };
  writeFileSync(out, `${JSON.stringify(record, null, 2)}\n`);
  console.log(
    `npm audit: the advisory service was not reachable (${record.reason}); recorded in ${out}, not a failure`,
  );
  process.exit(0);
}
const record = {
  at: new Date().toISOString(),
  reachable: true,
  vulnerabilities: counts,
  advisories: Object.values(report.vulnerabilities ?? {}).map((v) => ({
    name: v.name,
    severity: v.severity,
    range: v.range,
  })),
};
writeFileSync(out, `${JSON.stringify(record, null, 2)}\n`);
console.log(`npm audit (runtime dependencies): ${JSON.stringify(counts)}; recorded in ${out}`);
for (const a of record.advisories) console.log(`  ${a.severity}: ${a.name} ${a.range}`);
process.exit((counts.high ?? 0) + (counts.critical ?? 0) > 0 ? 1 : 0);
