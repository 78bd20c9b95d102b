/**
 * `/watch`: the paying member's live watchlist (the entitlement rule's `watchlist` surface),
 * `POST /watch` (choose the coins and timeframes), and `/watch/stream`, the server-sent events
 * that keep it current. A stream wakes on this process's readings hub (the market feed tells
 * it after each commit, its own or one it followed from another process), re-reads the cells
 * from the snapshot a paid call reads and sends them when they changed; no Token moves. One
 * stream per web session: a new one replaces the old (at once in this process, at the old
 * one's next heartbeat elsewhere), and a stream re-checks its session and plan at each heartbeat.
 */
import { Hono } from "hono";
import { getAccountSummary } from "../../accounts/accounts.ts";
import { entitlement, viewerOf } from "../../accounts/entitlement.ts";
import {
  ChangeTimes,
  claimWatchStream,
  getWatchlist,
  holdsWatchStream,
  parseWatchlist,
  releaseWatchStream,
  saveWatchlist,
  WatchlistError,
  watchCells,
} from "../../accounts/watchlist.ts";
import { errorSummary } from "../../logger.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { methodNotAllowed, type PageKit, type Signed, type WebDeps, type WebEnv } from "../page-kit.ts";
import { renderWatchPage, renderWatchRows, renderWatchUpgradePage } from "../watch-page.ts";

/** A stream says something at least this often (a comment), and re-checks its session and plan. */
export const WATCH_HEARTBEAT_MS = 15_000;

/** What the watch routes share: the process's change times, its open streams, the entitlement check. */
interface WatchState {
  readonly times: ChangeTimes;
  /** This process's open stream per session (by session token hash). */
  readonly open: Map<string, AbortController>;
  readonly mayWatch: (signed: Signed) => boolean;
}

/** Routes of `/watch` and `/watch/stream`. */
export function watchRoutes(kit: PageKit): Hono<WebEnv> {
  const { db, clock } = kit.deps;
  const app = new Hono<WebEnv>();
  const state: WatchState = {
    times: new ChangeTimes(db),
    open: new Map(),
    mayWatch: (signed) => entitlement(viewerOf(signed.summary, clock()), "watchlist").admitted,
  };
  watchPageRoutes(kit, app, state);
  watchStreamRoutes(kit, app, state);
  return app;
}

/** `/watch`: the page, and the form that chooses the coins and timeframes. */
function watchPageRoutes(kit: PageKit, app: Hono<WebEnv>, { times, mayWatch }: WatchState): void {
  const { db, clock, snapshot } = kit.deps;
  app.get("/watch", kit.session, async (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/watch");
    if (!mayWatch(signed)) return kit.page(c, 403, renderWatchUpgradePage(signed.ctx));
    if (!snapshot)
      return kit.page(
        c,
        503,
        renderMessagePage(signed.ctx, "Watchlist unavailable", "This server has no live market feed."),
      );
    const list = await getWatchlist(db, signed.session.accountId);
    const now = clock();
    const flash = c.req.query("saved") !== undefined ? "Watchlist saved." : null;
    return kit.page(
      c,
      200,
      renderWatchPage(signed.ctx, { list, cells: await watchCells(snapshot, times, list, now), now, flash }, [
        kit.assets.url("watch.js"),
      ]),
    );
  });

  app.post("/watch", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    if (!mayWatch(signed)) return kit.page(c, 403, renderWatchUpgradePage(signed.ctx));
    const form = c.get("form");
    const input = {
      symbols: (form.get("symbols") ?? "").slice(0, 400),
      timeframes: form.getAll("timeframes").slice(0, 10),
    };
    try {
      await saveWatchlist(db, signed.session.accountId, parseWatchlist(input.symbols, input.timeframes), clock());
      return kit.seeOther(c, "/watch?saved");
    } catch (err) {
      if (!(err instanceof WatchlistError)) throw err;
      const list = await getWatchlist(db, signed.session.accountId);
      const now = clock();
      const cells = snapshot ? await watchCells(snapshot, times, list, now) : [];
      return kit.page(
        c,
        400,
        renderWatchPage(signed.ctx, { list, cells, now, error: `Not saved: ${err.message}.`, input }, [
          kit.assets.url("watch.js"),
        ]),
      );
    }
  });
  app.all("/watch", methodNotAllowed(kit, "GET, POST"));
}

/** `/watch/stream`: the session's one stream of cells (a new one replaces the old). */
function watchStreamRoutes(kit: PageKit, app: Hono<WebEnv>, state: WatchState): void {
  const { db, clock, snapshot, readings: hub } = kit.deps;
  app.get("/watch/stream", kit.session, async (c) => {
    const signed = c.get("signed");
    const refuse = (status: 401 | 403 | 503, text: string) =>
      c.body(text, status, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" });
    if (signed === null) return refuse(401, "Sign in first.");
    if (!state.mayWatch(signed))
      return refuse(403, "The watchlist is for the node and founding-seat plans with an active subscription.");
    if (!snapshot || !hub || hub.closed) return refuse(503, "No live market feed here.");
    const sessionHash = signed.session.tokenHash;
    const streamId = await claimWatchStream(db, sessionHash, clock());
    state.open.get(sessionHash)?.abort();
    const stop = new AbortController();
    state.open.set(sessionHash, stop);
    const stream = { sessionHash, streamId, accountId: signed.session.accountId, stop, snapshot, hub };
    return new Response(cellStream(kit, state, stream), {
      status: 200,
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      },
    });
  });
  app.all("/watch/stream", methodNotAllowed(kit, "GET"));
}

interface OneStream {
  readonly sessionHash: string;
  readonly streamId: string;
  readonly accountId: number;
  readonly stop: AbortController;
  readonly snapshot: NonNullable<WebDeps["snapshot"]>;
  readonly hub: NonNullable<WebDeps["readings"]>;
}

/**
 * The server-sent events of one stream: the cells each time the readings hub wakes and they
 * changed, a heartbeat at least every WATCH_HEARTBEAT_MS, and `ended` once the session, its
 * one stream or the plan is gone.
 */
function cellStream(
  kit: PageKit,
  { times, open }: WatchState,
  { sessionHash, streamId, accountId, stop, snapshot, hub }: OneStream,
): ReadableStream<Uint8Array> {
  const { db, clock, logger } = kit.deps;
  const encoder = new TextEncoder();

  /** True while this stream may go on: still the session's one stream, the session alive, the plan paid. */
  async function stillAllowed(): Promise<boolean> {
    if (!(await holdsWatchStream(db, sessionHash, streamId, clock()))) return false;
    return entitlement(viewerOf(await getAccountSummary(db, accountId, clock()), clock()), "watchlist").admitted;
  }

  return new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (text: string) => controller.enqueue(encoder.encode(text));
      let last = "";
      let nextCheck = clock() + WATCH_HEARTBEAT_MS;
      try {
        send(`retry: 3000\n\n`);
        while (!stop.signal.aborted && !hub.closed) {
          const seen = hub.wakeups;
          // The list is read each time: a save in another tab shows without a reconnect.
          const list = await getWatchlist(db, accountId);
          const now = clock();
          const cells = await watchCells(snapshot, times, list, now);
          const data = JSON.stringify({ cells, rows: renderWatchRows(cells).value });
          if (data !== last) {
            send(`event: cells\ndata: ${data}\n\n`);
            last = data;
          }
          if (now >= nextCheck) {
            if (!(await stillAllowed())) {
              send(`event: ended\ndata: {}\n\n`);
              break;
            }
            send(`: heartbeat\n\n`);
            nextCheck = now + WATCH_HEARTBEAT_MS;
          }
          await hub.wait(seen, stop.signal, WATCH_HEARTBEAT_MS);
        }
      } catch (err) {
        if (!stop.signal.aborted)
          logger.warn({ err: errorSummary(err), accountId }, "watchlist stream ended on an error");
      } finally {
        if (open.get(sessionHash) === stop) open.delete(sessionHash);
        releaseWatchStream(db, sessionHash, streamId).catch(() => {});
        try {
          controller.close();
        } catch {
          // already closed by the client
        }
      }
    },
    cancel() {
      stop.abort();
    },
  });
}
