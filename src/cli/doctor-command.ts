/**
 * `signals doctor`: what selling needs, one line each (ok / missing / failing) with the one line
 * that fixes it, and a non-zero exit when anything selling needs is not ok (or anything
 * configured is failing). The CLI checks the internal token itself and whether a server answers
 * on the internal listener; the rest (src/doctor/checks.ts) runs in that server, with its own
 * configuration, through AdminService.RunChecks, or in this process when no server answers.
 */
import { lstatSync } from "node:fs";
import type { Config } from "../config.ts";
import { readLock } from "../server/data-dir-lock.ts";
import { internalTokenPath, readInternalToken } from "../server/internal-token.ts";
import { remoteTransport, withInternalTransport } from "./admin-client.ts";

type Status = "ok" | "missing" | "failing";
interface Line {
  name: string;
  status: Status;
  detail: string;
  fix: string;
  needed: boolean;
}

const STATUS_NAMES: Record<number, Status> = { 1: "ok", 2: "missing", 3: "failing" };

/** The token check: INTERNAL_TOKEN, or the file the server writes (0600, not a link). */
function tokenCheck(config: Config): Line {
  const name = "internal token";
  if (config.internalToken)
    return { name, status: "ok", detail: "INTERNAL_TOKEN is set (it overrides the token file)", fix: "", needed: true };
  const file = internalTokenPath(config.dataDir);
  let mode: number;
  try {
    const stat = lstatSync(file);
    if (stat.isSymbolicLink())
      return {
        name,
        status: "failing",
        detail: `${file} is a symbolic link (the server refuses it)`,
        fix: `rm ${file} && npx signals token rotate`,
        needed: true,
      };
    mode = stat.mode & 0o777;
  } catch {
    return {
      name,
      status: "missing",
      detail: `no ${file}`,
      fix: "npm start   (the first start writes it; or: npx signals token rotate)",
      needed: true,
    };
  }
  try {
    readInternalToken(config.dataDir);
  } catch (err) {
    return { name, status: "failing", detail: (err as Error).message, fix: "npx signals token rotate", needed: true };
  }
  if ((mode & 0o077) !== 0)
    return {
      name,
      status: "failing",
      detail: `${file} is readable by other users (mode ${mode.toString(8)})`,
      fix: `chmod 600 ${file}   (or restart the server: it repairs the modes)`,
      needed: true,
    };
  return { name, status: "ok", detail: `${file} (0600)`, fix: "", needed: true };
}

/** Where the server's internal listener should be: the embedded directory's holder, else the configured address. */
function serverAddress(config: Config): { host: string; port: number } {
  const holder = config.databaseUrl ? null : readLock(config.dataDir);
  if (holder?.role === "server" && holder.internalPort)
    return { host: holder.internalHost ?? "127.0.0.1", port: holder.internalPort };
  return { host: config.internalHost, port: config.internalPort };
}

async function answers(host: string, port: number): Promise<boolean> {
  const hostPart = host.includes(":") ? `[${host}]` : host;
  try {
    const res = await fetch(`http://${hostPart}:${port}/healthz`, { signal: AbortSignal.timeout(3_000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** Runs the doctor; resolves to the exit code. */
export async function runDoctor(config: Config, json: boolean): Promise<number> {
  const [{ createClient, ConnectError, Code }, { AdminService }] = await Promise.all([
    import("@connectrpc/connect"),
    import("../../gen/signals/v1/admin_pb.js"),
  ]);
  const lines: Line[] = [tokenCheck(config)];
  const { host, port } = serverAddress(config);
  const toLines = (
    checks: Array<{ name: string; status: number; detail: string; fix: string; needed: boolean }>,
  ): Line[] =>
    checks.map((c) => ({
      name: c.name,
      status: STATUS_NAMES[c.status] ?? "failing",
      detail: c.detail,
      fix: c.fix,
      needed: c.needed,
    }));
  let checked = false;
  if (await answers(host, port)) {
    lines.push({
      name: "server",
      status: "ok",
      detail: `answers on ${host}:${port}; the checks below ran in it, with its configuration`,
      fix: "",
      needed: true,
    });
    try {
      const client = createClient(AdminService, await remoteTransport(config, host, port));
      lines.push(...toLines((await client.runChecks({})).checks));
      checked = true;
    } catch (err) {
      const refused = err instanceof ConnectError && err.code === Code.Unauthenticated;
      lines[0] = refused
        ? {
            ...lines[0]!,
            status: "failing",
            detail: `the server on ${host}:${port} refuses this token`,
            fix: "run the doctor with the server's DATA_DIR (or its INTERNAL_TOKEN)",
          }
        : lines[0]!;
      if (!refused)
        lines.push({
          name: "server",
          status: "failing",
          detail: `RunChecks failed: ${(err as Error).message}`,
          fix: "look at the server's log",
          needed: true,
        });
    }
  } else {
    lines.push({
      name: "server",
      status: "failing",
      detail: `nothing answers on ${host}:${port}; the checks below ran here, with this shell's configuration`,
      fix: "npm start",
      needed: true,
    });
  }
  if (!checked && (config.databaseUrl || readLock(config.dataDir) === null)) {
    try {
      lines.push(
        ...(await withInternalTransport(
          config,
          async (transport) => toLines((await createClient(AdminService, transport).runChecks({})).checks),
          "admin",
        )),
      );
    } catch (err) {
      lines.push({
        name: "database",
        status: "failing",
        detail: `cannot be opened: ${(err as Error).message}`,
        fix: "check DATABASE_URL (or DATA_DIR)",
        needed: true,
      });
    }
  }
  const blocking = lines.filter((l) => (l.needed && l.status !== "ok") || l.status === "failing");
  const ready = blocking.length === 0;
  if (json) {
    process.stdout.write(`${JSON.stringify({ ok: ready, checks: lines })}\n`);
  } else {
    const width = Math.max(...lines.map((l) => l.name.length));
    const out: string[] = [];
    for (const l of lines) {
      out.push(`${l.status.padEnd(8)}${l.name.padEnd(width + 2)}${l.detail}`);
      if (l.fix) out.push(`${" ".repeat(8 + width + 2)}fix: ${l.fix}`);
    }
    out.push("", ready ? "ready to sell" : `not ready to sell: ${blocking.map((l) => l.name).join(", ")}`);
    process.stdout.write(`${out.join("\n")}\n`);
  }
  return ready ? 0 : 1;
}
