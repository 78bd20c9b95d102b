/**
 * The request a piece of code is running for: its id (every log line written while serving it
 * carries `reqId`), the caller's address (failed-key throttling) and its outcome code (access
 * log, metrics). Carried by AsyncLocalStorage, so no handler signature has to pass it along.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface RequestContext {
  readonly reqId: string;
  /** The caller's address (the socket's, or the proxy's hop with TRUST_PROXY). */
  readonly peer: string;
  /** Machine outcome of the call: "ok" or an error code, once known. */
  outcome?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` (and everything it starts) as part of the given request. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The current request, or undefined outside one (start-up, background workers). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** Records the call's outcome on the current request, if any. */
export function recordOutcome(outcome: string): void {
  const context = storage.getStore();
  if (context) context.outcome = outcome;
}
