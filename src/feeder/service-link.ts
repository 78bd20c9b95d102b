/**
 * The feeder's link to the service as its health check sees it: every call to the internal
 * listener (candle pushes, leases, resume points, dataset pushes) goes through one interceptor
 * that adds the bearer token and notes how the call ended. A call the service refuses for its
 * token makes the feeder read the token file again (the operator may have rotated it), so the
 * next retry carries the new one; while the last call was refused or could not reach the
 * service, /healthz fails and says which.
 */
import { Code, ConnectError, type Interceptor, type StreamResponse, type UnaryResponse } from "@connectrpc/connect";
import type { Logger } from "pino";
import { errorSummary } from "../logger.ts";

/** Why the feeder cannot push right now. */
export type LinkProblem = "refused" | "unreachable";

/** Where the token comes from: INTERNAL_TOKEN or the token file (re-read by reload()). */
export interface FeederToken {
  current(): string;
  /** Reads the file again; true when it holds another token now. */
  reload(): boolean;
  /** The token file, or null when INTERNAL_TOKEN fixes the token. */
  readonly file: string | null;
}

/** A token that never changes (INTERNAL_TOKEN, or a test's). */
export function fixedToken(token: string): FeederToken {
  return { current: () => token, reload: () => false, file: null };
}

export interface LinkState {
  readonly problem: LinkProblem;
  /** Epoch ms of the first failure of this run of failures. */
  readonly since: number;
  readonly message: string;
}

/** Codes a call gets when the service is down, restarting or cut off (connection refused, reset, timeout). */
const UNREACHABLE = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Unknown]);

export class ServiceLink {
  readonly #token: FeederToken;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #server: string;
  #state: LinkState | null = null;

  constructor(token: FeederToken, options: { server: string; logger: Logger; now: () => number }) {
    this.#token = token;
    this.#server = options.server;
    this.#logger = options.logger;
    this.#now = options.now;
  }

  /** The current problem, or null while the last call went through. */
  state(): LinkState | null {
    return this.#state;
  }

  /** Adds the bearer token and the feeder id to every call, and watches how each ends. */
  interceptor(feederId: string): Interceptor {
    return (next) => async (req) => {
      req.header.set("authorization", `Bearer ${this.#token.current()}`);
      req.header.set("x-feeder-id", feederId);
      let res: UnaryResponse | StreamResponse;
      try {
        res = await next(req);
      } catch (err) {
        this.#failed(err);
        throw err;
      }
      if (!res.stream) {
        this.#ok();
        return res;
      }
      // A streamed answer ends well only once its last message is read.
      const messages = res.message;
      const link = this;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* messages;
          } catch (err) {
            link.#failed(err);
            throw err;
          }
          link.#ok();
        })(),
      } as StreamResponse;
    };
  }

  #ok(): void {
    if (this.#state)
      this.#logger.info(
        { after: this.#state.problem, sinceMs: this.#now() - this.#state.since },
        "the service accepts this feeder again",
      );
    this.#state = null;
  }

  #failed(err: unknown): void {
    const code = err instanceof ConnectError ? err.code : Code.Unavailable;
    let problem: LinkProblem;
    let message: string;
    if (code === Code.Unauthenticated || code === Code.PermissionDenied) {
      problem = "refused";
      const reloaded = this.#token.reload();
      message = this.#token.file
        ? `the service at ${this.#server} refused the internal token; ` +
          `${reloaded ? "read a new one from" : "waiting for a new one in"} ` +
          `${this.#token.file} (npx signals token rotate writes it)`
        : `the service at ${this.#server} refused INTERNAL_TOKEN; set the token the server uses and restart the feeder`;
      if (reloaded)
        this.#logger.warn(
          { file: this.#token.file },
          "the service refused the internal token; read a new one from the token file",
        );
    } else if (UNREACHABLE.has(code)) {
      problem = "unreachable";
      message = `cannot reach the service at ${this.#server}: ${errorSummary(err).message}`;
    } else {
      // Any other answer (a refused row, a server error, our own cancel) came from a service that
      // took the token, or is no news about it.
      if (code !== Code.Canceled && code !== Code.Aborted) this.#ok();
      return;
    }
    if (this.#state?.problem !== problem) this.#state = { problem, since: this.#now(), message };
    else this.#state = { ...this.#state, message };
  }
}
