/**
 * WORKERS > 1: this process becomes the primary of a node:cluster. It forks the server workers
 * (each runs src/main.ts and accepts on the public port's one socket, which the primary binds
 * and shares with them) and supervises them; it serves nothing itself. Worker 0 is the
 * lead: it alone opens the internal listener (so candles are applied by one engine writer per
 * machine), delivers alerts and runs the purge timer. The followers read the market from
 * memory and follow the lead's commits through the database's market_updated notifications,
 * as separate server processes on one database always have. docs/architecture.md ("Worker
 * processes") explains the choice of node:cluster over reusePort listeners.
 *
 * A worker that dies is forked again after a backoff (the lead with the internal port it had,
 * so feeders reconnect to the same address); SIGTERM drains every worker, then the primary exits.
 */
import cluster, { type Worker } from "node:cluster";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import { backoffMs } from "../retry.ts";
import { ensureInternalToken } from "./internal-token.ts";

/** The message a worker sends the primary once its listeners are open. */
interface ReadyMessage {
  readonly type: "ready";
  readonly port: number;
  readonly internalPort: number | null;
}

/** Called by a worker once it listens (a no-op when this process is not a cluster worker). */
export function reportReady(port: number, internalPort: number | null): void {
  if (cluster.isWorker) process.send?.({ type: "ready", port, internalPort } satisfies ReadyMessage);
}

/** First restart delay of a worker that died; doubles per quick death up to the ceiling. */
const RESTART_BASE_MS = 250;
const RESTART_MAX_MS = 10_000;
/** A worker that ran this long before dying starts the backoff afresh. */
const HEALTHY_RUN_MS = 10_000;
/** A worker still running this long after SIGTERM is killed (its own drain ends within ~10 s). */
const STOP_GRACE_MS = 15_000;

export interface ClusterPrimary {
  readonly port: number;
  readonly internalPort: number;
  /** The workers' process ids, lead first. */
  pids(): number[];
  /** SIGTERM to every worker, waits for them; resolves 0 when all drained cleanly, else 1. */
  stop(): Promise<number>;
}

interface Slot {
  readonly index: number;
  worker: Worker | null;
  startedAt: number;
  quickDeaths: number;
  restartTimer: NodeJS.Timeout | null;
}

/** What the primary knows of its workers. */
interface Supervision {
  readonly config: Config;
  readonly logger: Logger;
  readonly slots: Slot[];
  stopping: boolean;
  /** Until every worker first listens, a death fails the start instead of being restarted. */
  started: boolean;
  /** The lead's internal port once it first listened (a restarted lead takes it again). */
  internalPort: number | null;
}

/** Readies node:cluster for the workers; the primary itself serves nothing. */
function setUpCluster(config: Config): void {
  // The token file exists before the workers start, so they all read the same one (and the
  // lead follows its rotations); INTERNAL_TOKEN, when set, reaches them with the environment.
  ensureInternalToken(config);
  // The workers accept from the one listening socket themselves (SCHED_NONE) rather than
  // through the primary's round-robin queue: that queue's connections were reset when the
  // workers drained on SIGTERM (accepted, never answered), and a worker's crash loses only the
  // connections it holds, the kernel's queue going to the survivors (docs/architecture.md).
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  // Workers run main.ts whatever started the primary (`npm start` or `signals serve`).
  cluster.setupPrimary({ exec: fileURLToPath(new URL("../main.ts", import.meta.url)), args: [] });
}

/** Resolves with the worker's ready message; rejects if it exits before sending one. */
function readyOf(worker: Worker, index: number): Promise<ReadyMessage> {
  return new Promise<ReadyMessage>((resolve, reject) => {
    const onMessage = (message: ReadyMessage) => {
      if (message?.type !== "ready") return;
      worker.off("exit", onEarlyExit);
      resolve(message);
    };
    const onEarlyExit = (code: number | null, signal: string | null) => {
      worker.off("message", onMessage);
      reject(new Error(`worker ${index} exited (code ${code}, signal ${signal}) before listening`));
    };
    worker.on("message", onMessage);
    worker.once("exit", onEarlyExit);
  });
}

/** The environment a worker is forked with, on top of the primary's own. */
export function workerEnv(lead: boolean, internalPort: number | null, config: Config): Record<string, string> {
  return {
    SIGNALS_WORKER_ROLE: lead ? "lead" : "follower",
    // A restarted lead takes the internal port it had (it was 0 only the first time).
    ...(lead && internalPort !== null ? { INTERNAL_PORT: String(internalPort) } : {}),
    // glibc reads it when the process starts, so it goes in the fork's environment: without it
    // each thread that allocates (V8's platform workers compiling and marking, libuv's pool) may
    // get an arena of its own, up to 8 per core, and what is freed there stays resident
    // (docs/decisions.md, "MALLOC_ARENA_MAX=2 in each worker").
    MALLOC_ARENA_MAX: String(config.workerMallocArenas),
  };
}

function fork(sup: Supervision, slot: Slot): { worker: Worker; ready: Promise<ReadyMessage> } {
  const lead = slot.index === 0;
  const worker = cluster.fork(workerEnv(lead, sup.internalPort, sup.config));
  slot.worker = worker;
  slot.startedAt = Date.now();
  const ready = readyOf(worker, slot.index);
  worker.once("exit", (code, signal) => restartLater(sup, slot, worker, code, signal));
  return { worker, ready };
}

/** Forks a dead worker again after a backoff that grows with its quick deaths. */
function restartLater(sup: Supervision, slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
  if (slot.worker !== worker) return;
  slot.worker = null;
  if (sup.stopping || !sup.started) return;
  const ranMs = Date.now() - slot.startedAt;
  slot.quickDeaths = ranMs >= HEALTHY_RUN_MS ? 0 : slot.quickDeaths + 1;
  const delayMs = backoffMs(slot.quickDeaths, RESTART_BASE_MS, RESTART_MAX_MS, "none");
  sup.logger.warn(
    { worker: slot.index, pid: worker.process.pid, code, signal, ranMs, restartInMs: delayMs },
    "worker exited; restarting it",
  );
  slot.restartTimer = setTimeout(() => {
    slot.restartTimer = null;
    if (sup.stopping) return;
    const { worker: next, ready } = fork(sup, slot);
    ready.then(
      () => sup.logger.info({ worker: slot.index, pid: next.process.pid }, "worker restarted"),
      // Its exit handler schedules the next attempt.
      (err: Error) =>
        sup.logger.warn({ worker: slot.index, err: err.message }, "restarted worker died before listening"),
    );
  }, delayMs);
}

/** SIGTERM, then SIGKILL after the grace; resolves with the exit code. */
function stopWorker(worker: Worker): Promise<number> {
  return new Promise<number>((resolve) => {
    const timer = setTimeout(() => worker.process.kill("SIGKILL"), STOP_GRACE_MS);
    worker.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code ?? 1);
    });
    worker.process.kill("SIGTERM");
  });
}

async function stopAll(sup: Supervision): Promise<number> {
  sup.stopping = true;
  const exits: Promise<number>[] = [];
  for (const slot of sup.slots) {
    if (slot.restartTimer) clearTimeout(slot.restartTimer);
    if (slot.worker && !slot.worker.isDead()) exits.push(stopWorker(slot.worker));
  }
  const codes = await Promise.all(exits);
  return codes.every((code) => code === 0) ? 0 : 1;
}

/** Forks `config.workers` workers, resolves once all listen; rejects if one dies before that. */
export async function startClusterPrimary(config: Config, logger: Logger): Promise<ClusterPrimary> {
  setUpCluster(config);
  const slots: Slot[] = Array.from({ length: config.workers }, (_, index) => ({
    index,
    worker: null,
    startedAt: 0,
    quickDeaths: 0,
    restartTimer: null,
  }));
  const sup: Supervision = { config, logger, slots, stopping: false, started: false, internalPort: null };
  try {
    // All at once (start-up is mostly loading code and the market): the first to migrate holds
    // the migration lock (db/client.ts) and the others find the schema current.
    const [leadReady] = await Promise.all(slots.map((slot) => fork(sup, slot).ready));
    sup.internalPort = leadReady!.internalPort;
    sup.started = true;
    return {
      port: leadReady!.port,
      internalPort: sup.internalPort!,
      pids: () => slots.map((slot) => slot.worker?.process.pid ?? 0),
      stop: () => stopAll(sup),
    };
  } catch (err) {
    await stopAll(sup);
    throw err;
  }
}
