/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) as Markdown tables: the top frames by
 * self time and by inclusive time (a frame counted once per sample even when it recurses), and
 * self time grouped by package. Used for bench/README.md's "where the time goes".
 *
 *   node bench/cpu-profile-table.ts /tmp/prof/CPU.….cpuprofile [top=20] [last=seconds]
 *
 * `last`: only the samples of the profile's last seconds (e.g. bench/api.ts's final open-loop
 * turn, which ends just before the server is stopped), leaving out start-up and earlier phases.
 *
 *   node bench/cpu-profile-table.ts <file> [top] --from <µs> --seconds <s>
 *
 * only the samples from a moment on the monotonic clock (`process.hrtime`, which a profile's
 * sample times are on; bench/burst.ts prints it at each close) for that many seconds.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  /** Monotonic clock, µs. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A frame's readable name: function, file (shortened to its package or our path) and line. */
function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || "(anonymous)";
  if (!url) return name;
  return `${name} ${shortUrl(url)}:${lineNumber + 1}`;
}

function shortUrl(url: string): string {
  const modules = url.lastIndexOf("node_modules/");
  if (modules >= 0) return url.slice(modules + "node_modules/".length);
  const src = url.search(/\/(src|gen|bench)\//);
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, "");
}

/** Which part of the process a frame belongs to. */
function groupOf(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  if (!url) return functionName.startsWith("(") ? functionName : "V8 / native";
  const modules = url.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const rest = url.slice(modules + "node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:")) return "Node built-ins";
  const ours = /\/(src|gen)\/(.*?)\/?[^/]*$/.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

/** Samples counted: the profile's last `lastSeconds`, or from `from` (monotonic µs) for `seconds`. */
export type SampleWindow = { lastSeconds: number } | { from: number; seconds: number };

export function summarise(profile: Profile, top = 20, window: SampleWindow = { lastSeconds: Infinity }): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const groups = new Map<string, number>();
  let total = 0;
  let idle = 0;
  const span = profile.timeDeltas.reduce((sum, us) => sum + us, 0);
  let at = 0;
  const counted =
    "lastSeconds" in window
      ? (t: number) => span - t <= window.lastSeconds * 1e6
      : (t: number) =>
          profile.startTime + t >= window.from && profile.startTime + t <= window.from + window.seconds * 1e6;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (!counted(at)) return;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === "(idle)") {
      idle += us;
      return;
    }
    total += us;
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + us);
    const group = groupOf(node);
    groups.set(group, (groups.get(group) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = frameName(byId.get(at)!);
      if (seen.has(frame) || frame === "(root)") continue;
      seen.add(frame);
      inclusive.set(frame, (inclusive.get(frame) ?? 0) + us);
    }
  });
  const pct = (us: number) => `${((100 * us) / total).toFixed(1)} %`;
  const table = (title: string, rows: Map<string, number>, n: number) =>
    [
      `| ${title} | ms | share of busy time |`,
      `|---|---|---|`,
      ...[...rows]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, v]) => `| \`${k}\` | ${(v / 1000).toFixed(0)} | ${pct(v)} |`),
    ].join("\n");
  return [
    `busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms`,
    "",
    table("self time, by package", groups, top),
    "",
    table("self time, by frame", self, top),
    "",
    table("inclusive time, by frame", inclusive, top),
  ].join("\n");
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : Number(args.splice(i, 2)[1]);
  };
  const from = option("--from");
  const seconds = option("--seconds");
  const [file, top, last] = args;
  if (!file) {
    console.error(
      "usage: node bench/cpu-profile-table.ts <file.cpuprofile> [top] [last seconds | --from µs --seconds s]",
    );
    process.exit(2);
  }
  const window: SampleWindow =
    from !== undefined ? { from, seconds: seconds ?? 2 } : { lastSeconds: last ? Number(last) : Infinity };
  console.log(summarise(JSON.parse(readFileSync(file, "utf8")) as Profile, Number(top ?? 20), window));
}
