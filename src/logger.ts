/**
 * Structured JSON logs (pino). Secrets never reach a log line: headers that carry them are
 * redacted by path, and nothing logs a raw key anywhere in the code.
 */
import { type DestinationStream, type Logger, type LoggerOptions, pino } from "pino";
import { currentRequest } from "./request-context.ts";

/** Creates the process logger writing JSON lines to stdout (or to `destination`, in tests). */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const stream = destination ?? stdoutInBlocks();
  const options: LoggerOptions = {
    level,
    base: { service: "signals" },
    // Every line written while serving a request carries its id (the x-request-id header).
    mixin: () => {
      const request = currentRequest();
      return request ? { reqId: request.reqId } : {};
    },
    redact: {
      paths: [
        'req.headers["x-api-key"]',
        "req.headers.authorization",
        "req.headers.cookie",
        "apiKey",
        "api_key",
        "token",
      ],
      censor: "[redacted]",
    },
    hooks: {
      // Warnings and errors are written at once, with the lines buffered before them: they are
      // what an operator needs of a process that then dies without exiting (SIGKILL, OOM).
      logMethod(args, method, lineLevel) {
        method.apply(this, args);
        if (lineLevel >= WARN) flushSync(stream);
      },
    },
  };
  return pino(options, stream);
}

const WARN = 40;

function flushSync(stream: unknown): void {
  try {
    (stream as { flushSync?: () => void }).flushSync?.();
  } catch {
    // Not open yet or already closed: nothing buffered that could still be written.
  }
}

/** Writes the logger's buffered lines now, synchronously: before a process.exit or a re-raised signal. */
export function flushLogs(logger: Logger): void {
  flushSync((logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym]);
}

/**
 * Stdout in blocks of about 4 KB, and at least every 100 ms: one write per access log line
 * cost each call a thread-pool write and its wake-ups. Lines still buffered when the process
 * exits are written synchronously then (flushLogs, and pino on exit), warn and above at once;
 * a SIGKILL loses up to 100 ms of info lines.
 *
 * The 100 ms flush is our timer, not sonic-boom's `periodicFlush`: that one writes even an
 * empty buffer, a thread-pool write ten times a second in every idle process (about 1.5 ms of
 * CPU a second in an idle server worker; 5.2-5.6 against 0.55-0.62 ms/s for a destination
 * alone; bench/README.md, "CPU per billed call, eighth step"). Ours flushes only when a line was
 * written since its last flush.
 */
function stdoutInBlocks(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  let written = false;
  const write = stream.write.bind(stream);
  stream.write = (text: string) => {
    written = true;
    return write(text);
  };
  const timer = setInterval(() => {
    if (!written) return;
    // While a block's write is still out, sonic-boom's flush() does nothing, and a line logged
    // meanwhile would wait for the next line or the exit: keep it marked and try next tick.
    if ((stream as unknown as { _writing: boolean })._writing) return;
    written = false;
    try {
      stream.flush();
    } catch {
      // Destroyed (the process is ending): nothing more to flush.
      clearInterval(timer);
    }
  }, FLUSH_EVERY_MS);
  timer.unref();
  return stream;
}

const FLUSH_EVERY_MS = 100;

/**
 * A loggable summary of an error: its name, code and the first line of its message, cut to
 * 300 characters. Database errors carry the failed query and every parameter in their message
 * and fields (thousands of candle values, key hashes); those never go to the log whole.
 */
export function errorSummary(err: unknown): { type: string; code?: string; message: string; cause?: string } {
  const e = err as { name?: string; code?: string; message?: string; cause?: { message?: string } };
  const firstLine = (text: string | undefined) =>
    redactSecrets(
      String(text ?? err)
        .split("\n")[0]!
        .slice(0, 300),
    );
  return {
    type: e?.name ?? typeof err,
    ...(typeof e?.code === "string" ? { code: e.code } : {}),
    message: firstLine(e?.message),
    ...(e?.cause?.message ? { cause: firstLine(e.cause.message) } : {}),
  };
}

/**
 * Masks what looks like a secret in free text: our API keys and long hex digests (key hashes,
 * tokens). A database error's first line can quote a parameter (e.g. `malformed array literal:
 * "<key hash>,..."`, seen in test/reliability/db-faults.test.ts), and key hashes must not reach
 * the log either.
 */
export function redactSecrets(text: string): string {
  // Every access log line passes through here: most texts have nothing to mask, and a test
  // allocates nothing where two replaces would copy the text twice.
  if (!MAYBE_SECRET.test(text)) return text;
  return text.replace(/sig_live_[0-9A-Za-z]+/g, "sig_live_[redacted]").replace(/\b[0-9a-fA-F]{32,}\b/g, "[redacted]");
}

const MAYBE_SECRET = /sig_live_|[0-9a-fA-F]{32}/;
