/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) as Markdown tables: the top frames by
 * self time and by inclusive time (a frame counted once per sample even when it recurses), and
 * self time grouped by package. Used for bench/README.md's "where the time goes".
 *
 *   node bench/cpu-profile-table.ts /tmp/prof/CPU.….cpuprofile [top=20] [last=seconds]
 *
 * `last`: only the samples of the profile's last seconds (e.g. bench/api.ts's final open-loop
 * turn, which ends just before the server is stopped), leaving out start-up and earlier phases.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
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

export function summarise(profile: Profile, top = 20, lastSeconds = Infinity): string {
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
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    at += us;
    if (span - at > lastSeconds * 1e6) return;
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
  const [file, top, last] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node bench/cpu-profile-table.ts <file.cpuprofile> [top]");
    process.exit(2);
  }
  console.log(
    summarise(JSON.parse(readFileSync(file, "utf8")) as Profile, Number(top ?? 20), last ? Number(last) : Infinity),
  );
}
