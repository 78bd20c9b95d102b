/**
 * Which process holds each accepted TCP connection of a listening port, read from Linux's
 * /proc (the kernel's own record, so the server needs no header or label to say who answered).
 * Read asynchronously: on a busy host /proc/net/tcp lists every socket of the machine and takes
 * tens of milliseconds to read, which a synchronous read took from the caller's event loop
 * (a benchmark's fake servers, answering late, then looked like a slow server).
 */
import { readdir, readFile, readlink } from "node:fs/promises";

/** The inode of every established connection whose local port is `port`, by its remote port. */
async function establishedInodes(port: number): Promise<Map<string, number>> {
  const byInode = new Map<string, number>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = await readFile(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [, local, remote, state] = fields as [string, string, string, string];
      // 01 = ESTABLISHED; ports are hexadecimal after the colon.
      if (state !== "01" || parseInt(local.split(":")[1]!, 16) !== port) continue;
      byInode.set(fields[9]!, parseInt(remote.split(":")[1]!, 16));
    }
  }
  return byInode;
}

/**
 * For each established connection to `port` held by one of `pids`: the client's port and the
 * holder's pid. A connection the primary accepted and handed on is held by the worker alone.
 */
export async function connectionOwners(port: number, pids: number[]): Promise<Map<number, number>> {
  const inodes = await establishedInodes(port);
  const owners = new Map<number, number>();
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const targets = await Promise.all(fds.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")));
    for (const target of targets) {
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      const clientPort = inode === undefined ? undefined : inodes.get(inode);
      if (clientPort !== undefined) owners.set(clientPort, pid);
    }
  }
  return owners;
}

/**
 * Whether the server listening on `port` still holds its end of the connection from the client
 * port `clientPort` open (ESTABLISHED). A client that stopped reading cannot see the server close
 * the connection (the close waits behind the unread answers), but the kernel's table shows it.
 */
export async function serverHoldsConnection(port: number, clientPort: number): Promise<boolean> {
  return [...(await establishedInodes(port)).values()].includes(clientPort);
}
