/**
 * A private test network of Linux network namespaces, made and removed by the test itself:
 * a LAN (a bridge in a namespace of its own) joining the test process's namespace and each host,
 * plus for each host that needs one a point-to-point "database link" to the test's namespace,
 * where the test relays connections to the machine's PostgreSQL. Addresses are in 10/8 and
 * exist only between these namespaces; no namespace has a default route, so nothing leaves the
 * machine. Every command is `ip` (iproute2); creating namespaces needs root.
 *
 * Names carry the creating process's pid, so a run that died without cleaning up is swept by
 * the next one (`sweepStaleNetworks`).
 */
import { spawnSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";

/** Namespace names of this helper: `mh-<pid>-<run>-<host>`. */
const PREFIX = "mh-";

/** Runs `ip <args>`; throws with its stderr when it fails. */
function ip(...args: string[]): string {
  const run = spawnSync("ip", args, { encoding: "utf8" });
  if (run.error) throw run.error;
  if (run.status !== 0) throw new Error(`ip ${args.join(" ")}: ${run.stderr.trim() || `exit ${run.status}`}`);
  return run.stdout;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Kills every process inside namespace `ns` (SIGKILL); returns their pids. */
export function killNamespace(ns: string): number[] {
  const pids = namespacePids(ns);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  return pids;
}

/** Pids of the processes inside namespace `ns` (empty when it has none or no longer exists). */
export function namespacePids(ns: string): number[] {
  const run = spawnSync("ip", ["netns", "pids", ns], { encoding: "utf8" });
  if (run.status !== 0) return [];
  return run.stdout
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

function namespaces(): string[] {
  const run = spawnSync("ip", ["netns", "list"], { encoding: "utf8" });
  if (run.status !== 0) return [];
  return run.stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/)[0] ?? "")
    .filter((name) => name.length > 0);
}

/** Removes namespaces left by earlier runs whose creating process is gone (and kills what ran in them). */
export function sweepStaleNetworks(): void {
  for (const ns of namespaces()) {
    const match = new RegExp(`^${PREFIX}(\\d+)-`).exec(ns);
    if (!match || alive(Number(match[1]))) continue;
    killNamespace(ns);
    spawnSync("ip", ["netns", "del", ns]);
  }
}

/**
 * Why this machine cannot run network-namespace tests, or null when it can: tries to add and
 * delete a probe namespace (needs root and iproute2). Synchronous, for use at collection time.
 */
export function netnsUnavailableReason(): string | null {
  if (process.platform !== "linux") return `network namespaces need Linux (this is ${process.platform})`;
  const probe = `${PREFIX}${process.pid}-probe`;
  const add = spawnSync("ip", ["netns", "add", probe], { encoding: "utf8" });
  if (add.error) return `cannot run ip (iproute2): ${add.error.message}`;
  if (add.status !== 0)
    return `cannot create a network namespace (ip netns add: ${add.stderr.trim() || `exit ${add.status}`}); needs root`;
  const veth = spawnSync("ip", ["-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"], {
    encoding: "utf8",
  });
  spawnSync("ip", ["netns", "del", probe]);
  if (veth.status !== 0) return `cannot create a veth pair (${veth.stderr.trim()})`;
  return null;
}

export interface NetHost {
  /** The namespace's name (for `ip netns exec`). */
  readonly ns: string;
  /** The host's address on the LAN. */
  readonly address: string;
  /** With a database link: the test namespace's address at its far end (where the host reaches the database). */
  readonly databaseAddress: string | null;
}

export interface TestNetwork {
  /** The test process's address on the LAN (fakes listen here). */
  readonly rootAddress: string;
  readonly hosts: ReadonlyMap<string, NetHost>;
  host(name: string): NetHost;
  /** Command prefix that runs a program inside a host's namespace. */
  launcher(name: string): string[];
  /** Takes the host's database link down (its packets are dropped silently, as in a partition). */
  cutDatabase(name: string): void;
  /** Brings the database link back up. */
  restoreDatabase(name: string): void;
  /** SIGKILLs every process of the host; returns their pids. */
  killHost(name: string): number[];
  /** Kills every process still in the network's namespaces and deletes them (idempotent). */
  destroy(): void;
}

/** Picks a 10.x.y.0/24 pair (LAN and database links) that no interface of this namespace uses. */
function freeSubnets(): [string, string] {
  const used = ip("-4", "-o", "addr", "show");
  for (let tries = 0; tries < 50; tries++) {
    const x = randomInt(100, 250);
    const y = randomInt(0, 127) * 2;
    const lan = `10.${x}.${y}`;
    const links = `10.${x}.${y + 1}`;
    if (!used.includes(` ${lan}.`) && !used.includes(` ${links}.`)) return [lan, links];
  }
  throw new Error("no free 10.x.y.0/24 for the test network");
}

/**
 * Builds the network: one namespace per entry of `hosts` (name → whether it gets a database
 * link), a LAN joining them with the test's namespace, and the database links.
 */
export function createTestNetwork(hosts: ReadonlyArray<{ name: string; databaseLink: boolean }>): TestNetwork {
  sweepStaleNetworks();
  const run = randomBytes(2).toString("hex");
  const base = `${PREFIX}${process.pid}-${run}`;
  // Interface names in the test's namespace must be unique there and at most 15 bytes.
  const ifBase = `mh${run}`;
  const switchNs = `${base}-lan`;
  const created: string[] = [];
  const made = new Map<string, NetHost>();
  const rootLinks = new Map<string, string>();
  const destroy = () => {
    for (const ns of created) killNamespace(ns);
    for (const ns of created.splice(0).reverse()) spawnSync("ip", ["netns", "del", ns]);
  };
  try {
    const [lan, links] = freeSubnets();
    const rootAddress = `${lan}.1`;
    ip("netns", "add", switchNs);
    created.push(switchNs);
    ip("-n", switchNs, "link", "add", "name", "switch", "type", "bridge");
    ip("-n", switchNs, "link", "set", "switch", "up");
    const plug = (port: string) => {
      ip("-n", switchNs, "link", "set", port, "master", "switch");
      ip("-n", switchNs, "link", "set", port, "up");
    };
    ip("link", "add", `${ifBase}l`, "type", "veth", "peer", "name", "root", "netns", switchNs);
    ip("addr", "add", `${rootAddress}/24`, "dev", `${ifBase}l`);
    ip("link", "set", `${ifBase}l`, "up");
    plug("root");
    hosts.forEach(({ name, databaseLink }, i) => {
      const ns = `${base}-${name}`;
      ip("netns", "add", ns);
      created.push(ns);
      ip("-n", ns, "link", "set", "lo", "up");
      ip("-n", ns, "link", "add", "lan", "type", "veth", "peer", "name", `h${i}`, "netns", switchNs);
      const address = `${lan}.${i + 2}`;
      ip("-n", ns, "addr", "add", `${address}/24`, "dev", "lan");
      ip("-n", ns, "link", "set", "lan", "up");
      plug(`h${i}`);
      let databaseAddress: string | null = null;
      if (databaseLink) {
        const rootSide = `${ifBase}d${i}`;
        ip("link", "add", rootSide, "type", "veth", "peer", "name", "db", "netns", ns);
        databaseAddress = `${links}.${i * 4 + 1}`;
        ip("addr", "add", `${databaseAddress}/30`, "dev", rootSide);
        ip("link", "set", rootSide, "up");
        ip("-n", ns, "addr", "add", `${links}.${i * 4 + 2}/30`, "dev", "db");
        ip("-n", ns, "link", "set", "db", "up");
        rootLinks.set(name, rootSide);
      }
      made.set(name, { ns, address, databaseAddress });
    });
    const host = (name: string) => {
      const h = made.get(name);
      if (!h) throw new Error(`no host ${name} in the test network`);
      return h;
    };
    const link = (name: string) => {
      const l = rootLinks.get(name);
      if (!l) throw new Error(`host ${name} has no database link`);
      return l;
    };
    return {
      rootAddress,
      hosts: made,
      host,
      launcher: (name) => ["ip", "netns", "exec", host(name).ns],
      cutDatabase: (name) => void ip("link", "set", link(name), "down"),
      restoreDatabase: (name) => void ip("link", "set", link(name), "up"),
      killHost: (name) => killNamespace(host(name).ns),
      destroy,
    };
  } catch (err) {
    destroy();
    throw err;
  }
}
