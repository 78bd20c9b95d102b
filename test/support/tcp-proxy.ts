/**
 * A TCP fault-injection proxy for database faults without touching the real server: the code
 * under test connects to the proxy, which forwards to the real PostgreSQL. A test can cut every
 * open connection at once (both directions reset, as when the database restarts or the network
 * drops), silence every open connection (nothing passes either way and nothing is closed, as
 * in a partition that drops packets), refuse new connections (nothing listens on the port:
 * ECONNREFUSED, as while the database is down), or accept them again.
 */
import net from "node:net";

export interface TcpProxy {
  /** Port the proxy listens on (stable across refuse/accept). */
  readonly port: number;
  /** Connection URL for `url` with host and port replaced by the proxy's. */
  urlFor(url: string): string;
  /** Resets every open connection (both sides); returns how many were cut. */
  cutAll(): number;
  /**
   * Stops forwarding on every open connection, both ways, and keeps both sockets open: each
   * peer sees a live connection on which the other says nothing (new connections still pass).
   */
  silenceAll(): number;
  /** Stops listening: new connections are refused until accept(). */
  refuse(): Promise<void>;
  /** Listens again on the same port. */
  accept(): Promise<void>;
  /** Connections accepted and cut so far, and open now. */
  stats(): { accepted: number; cut: number; open: number };
  close(): Promise<void>;
}

/** Starts a proxy on listenHost (127.0.0.1 unless given; a free port) forwarding to targetHost:targetPort. */
export async function startTcpProxy(
  targetHost: string,
  targetPort: number,
  listenHost = "127.0.0.1",
): Promise<TcpProxy> {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; silenced: boolean }>();
  let accepted = 0;
  let cut = 0;
  const server = net.createServer((client) => {
    accepted++;
    const upstream = net.connect(targetPort, targetHost);
    // No Nagle delay: small protocol messages go through at once, as on a direct connection.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const pair = { client, upstream, silenced: false };
    pairs.add(pair);
    const end = () => {
      // A partition does not pass on a close either: the other peer still hears nothing.
      if (pair.silenced) return;
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, listenHost, () => {
        server.off("error", reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const port = await listen(0);
  let listening = true;
  return {
    port,
    urlFor(url) {
      const u = new URL(url);
      u.hostname = listenHost;
      u.port = String(port);
      return u.toString();
    },
    cutAll() {
      let n = 0;
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        // RST, not FIN: the peers see a dead connection at once, whatever was in flight.
        pair.client.resetAndDestroy();
        pair.upstream.resetAndDestroy();
        n++;
      }
      cut += n;
      return n;
    },
    silenceAll() {
      let n = 0;
      for (const pair of pairs)
        if (!pair.silenced) {
          pair.silenced = true;
          // Read and drop what arrives (as a partition loses it) instead of letting it wait in
          // the kernel's buffers, which would close the TCP window: a peer sees that as a slow
          // reader, not as silence.
          pair.client.unpipe(pair.upstream);
          pair.upstream.unpipe(pair.client);
          for (const socket of [pair.client, pair.upstream]) socket.on("data", () => {}).resume();
          n++;
        }
      return n;
    },
    async refuse() {
      if (!listening) return;
      listening = false;
      // close() waits for open connections; they are the test's to cut.
      server.close();
    },
    async accept() {
      if (listening) return;
      // The port was ours a moment ago; retry briefly in case the OS has not released it yet.
      for (let attempt = 0; ; attempt++) {
        try {
          await listen(port);
          listening = true;
          return;
        } catch (err) {
          if (attempt >= 50) throw err;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    },
    stats: () => ({ accepted, cut, open: pairs.size }),
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      pairs.clear();
      if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      listening = false;
    },
  };
}
