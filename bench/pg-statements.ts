/**
 * Counts the statements a bench's server sent to PostgreSQL around a boundary, from the server's
 * log, and sums their logged durations: which statements the burst costs, per kind. The bench
 * database must log them: run the bench with BENCH_PG_LOG_STATEMENTS=duration
 * (log_min_duration_statement = 0 on its fresh database: counts and durations) or =1
 * (log_statement = 'all': counts only, cheaper). Durations are the backend's wall time, lock
 * waits included, not CPU.
 *
 *   node bench/pg-statements.ts <postgresql log> <close, epoch ms (the bench prints it)> [--seconds 2] [--quiet 4]
 *
 * The log's prefix must be PostgreSQL 15's Debian default ('%m [%p] %q%u@%d '); only databases
 * named signals_bench_* are read. Prints the burst window (the close to --seconds after) and the
 * quiet window before the close (--quiet seconds), each statement kind by its first words.
 */
import { readFileSync } from "node:fs";

interface Statement {
  /** Epoch ms of the log line. */
  readonly at: number;
  readonly pid: number;
  readonly text: string;
  /** The execute's duration in ms (log_min_duration_statement), null under log_statement. */
  readonly ms: number | null;
}

const LINE = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) UTC \[(\d+)\] \S+@(\S+) LOG: {2}(.*)$/;

function parseLog(path: string): Statement[] {
  const out: Statement[] = [];
  let current: { at: number; pid: number; db: string; message: string } | null = null;
  const flush = () => {
    if (current === null || !current.db.startsWith("signals_bench_")) return;
    // "duration: 1.2 ms  execute <name>: SQL" or "execute <name>: SQL" / "statement: SQL".
    const timed = /^duration: ([\d.]+) ms {2}(execute|statement)[^:]*: (.*)$/s.exec(current.message);
    const plain = /^(execute|statement)[^:]*: (.*)$/s.exec(current.message);
    if (timed) out.push({ at: current.at, pid: current.pid, text: timed[3]!, ms: Number(timed[1]) });
    else if (plain) out.push({ at: current.at, pid: current.pid, text: plain[2]!, ms: null });
  };
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = LINE.exec(line);
    if (m) {
      flush();
      current = { at: Date.parse(`${m[1]!.replace(" ", "T")}Z`), pid: Number(m[2]), db: m[3]!, message: m[4]! };
    } else if (current !== null && /^\s/.test(line)) current.message += ` ${line.trim()}`;
    else {
      flush();
      current = null;
    }
  }
  flush();
  return out;
}

/** A statement's kind: its first words, whitespace folded. */
function kindOf(text: string): string {
  return text.replace(/\s+/g, " ").trim().slice(0, 80);
}

function report(title: string, statements: Statement[], seconds: number): void {
  const timed = statements.some((s) => s.ms !== null);
  const byKind = new Map<string, { n: number; ms: number }>();
  for (const s of statements) {
    const k = byKind.get(kindOf(s.text)) ?? { n: 0, ms: 0 };
    k.n++;
    k.ms += s.ms ?? 0;
    byKind.set(kindOf(s.text), k);
  }
  const totalMs = statements.reduce((sum, s) => sum + (s.ms ?? 0), 0);
  console.log(
    `\n${title}: ${statements.length} statements (${(statements.length / seconds).toFixed(0)}/s) from ` +
      `${new Set(statements.map((s) => s.pid)).size} backends${timed ? `, ${totalMs.toFixed(0)} ms executing` : ""}`,
  );
  const rows = [...byKind].sort((a, b) => (timed ? b[1].ms - a[1].ms : b[1].n - a[1].n));
  for (const [kind, { n, ms }] of rows.slice(0, 20))
    console.log(`${String(n).padStart(6)}${timed ? `${ms.toFixed(0).padStart(7)} ms` : ""}  ${kind}`);
}

const [path, closeArg, ...rest] = process.argv.slice(2);
if (path === undefined || closeArg === undefined || !/^\d+$/.test(closeArg)) {
  console.error("usage: node bench/pg-statements.ts <postgresql log> <close epoch ms> [--seconds 2] [--quiet 4]");
  process.exit(2);
}
const option = (name: string, fallback: number) => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : fallback;
};
const close = Number(closeArg);
const seconds = option("--seconds", 2);
const quiet = option("--quiet", 4);
const all = parseLog(path);
report(
  `quiet (${quiet} s before the close)`,
  all.filter((s) => s.at >= close - quiet * 1000 && s.at < close),
  quiet,
);
report(
  `burst (the close to +${seconds} s)`,
  all.filter((s) => s.at >= close && s.at < close + seconds * 1000),
  seconds,
);
