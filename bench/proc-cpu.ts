/**
 * CPU time of processes from Linux /proc: for "server CPU per call", a steadier figure than
 * requests per second on a shared machine (it does not move with what other processes get).
 */
import { readdirSync, readFileSync } from "node:fs";

/** Kernel clock ticks per second (USER_HZ: 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** utime + stime, seconds (all threads). */
  cpuSeconds: number;
  /** stime alone: the kernel's work for the process (system calls, and the TCP work they do). */
  systemSeconds: number;
}

function procStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may contain spaces; fields follow the last ')'.
    const close = text.lastIndexOf(")");
    const fields = text.slice(close + 2).split(" ");
    return {
      pid,
      comm: text.slice(text.indexOf("(") + 1, close),
      ppid: Number(fields[1]),
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
      systemSeconds: Number(fields[12]) / TICKS_PER_SECOND,
    };
  } catch {
    return null;
  }
}

function allProcesses(): ProcStat[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => procStat(Number(name)))
    .filter((s): s is ProcStat => s !== null);
}

/** CPU seconds used so far by a process and all its descendants (e.g. a server's workers). */
export function treeCpuSeconds(rootPid: number): number {
  return treeCpu(rootPid).cpuSeconds;
}

/** CPU seconds, all and in the kernel, used so far by a process and all its descendants. */
export function treeCpu(rootPid: number): { cpuSeconds: number; systemSeconds: number } {
  const all = allProcesses();
  const tree = new Set(descendantsIn(all, rootPid));
  const members = all.filter((p) => tree.has(p.pid));
  return {
    cpuSeconds: members.reduce((sum, p) => sum + p.cpuSeconds, 0),
    systemSeconds: members.reduce((sum, p) => sum + p.systemSeconds, 0),
  };
}

/** A PostgreSQL backend serving `database` (its process title names the database). */
function servesDatabase(p: ProcStat, database: string): boolean {
  if (p.comm !== "postgres" && !p.comm.startsWith("postgres:")) return false;
  try {
    return readFileSync(`/proc/${p.pid}/cmdline`, "utf8").includes(` ${database} `);
  } catch {
    return false;
  }
}

/**
 * Starts counting the CPU of the PostgreSQL backends serving `database` (not the server's
 * shared background processes, nor other databases' backends on a shared machine). Backends
 * that exit meanwhile (pgbench's, at its end) are counted up to their last sample, taken every
 * 100 ms; `stop()` returns the CPU seconds used since the start.
 */
export function trackPostgresCpu(database: string): { stop(): number } {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = () => {
    for (const p of allProcesses()) {
      if (!servesDatabase(p, database)) continue;
      if (!first.has(p.pid)) first.set(p.pid, sampled ? 0 : p.cpuSeconds);
      last.set(p.pid, p.cpuSeconds);
    }
  };
  let sampled = false;
  sample();
  sampled = true;
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      let sum = 0;
      for (const [pid, seconds] of last) sum += seconds - first.get(pid)!;
      return sum;
    },
  };
}

/** CPU seconds the whole machine spent busy so far (all cores; from /proc/stat). */
export function machineBusySeconds(): number {
  const [cpu] = readFileSync("/proc/stat", "utf8").split("\n");
  const v = cpu!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
  return (v[0]! + v[1]! + v[2]! + v[5]! + v[6]! + v[7]!) / TICKS_PER_SECOND;
}

/** CPU seconds used so far by one process (all its threads); null once it has exited. */
export function processCpuSeconds(pid: number): number | null {
  return procStat(pid)?.cpuSeconds ?? null;
}

/** The pids of a process and its descendants now (read once: a sampler then reads only these). */
export function descendantPids(rootPid: number): number[] {
  return descendantsIn(allProcesses(), rootPid);
}

/** `rootPid` and every process in `all` that descends from it. */
function descendantsIn(all: readonly ProcStat[], rootPid: number): number[] {
  const tree = new Set([rootPid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all) {
      if (tree.has(p.pid) || !tree.has(p.ppid)) continue;
      tree.add(p.pid);
      grew = true;
    }
  }
  return [...tree];
}

/** The pids of the PostgreSQL backends serving `database` now. */
export function postgresBackendPids(database: string): number[] {
  return allProcesses()
    .filter((p) => servesDatabase(p, database))
    .map((p) => p.pid);
}
