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

/** Lines are handed to the stdout stream in blocks of at least this many characters... */
const BLOCK_CHARS = 4096;
/** ...or every this many milliseconds; the stream writes what it holds as often. */
const BLOCK_WAIT_MS = 50;

/**
 * Stdout in blocks of about 4 KB, and at least every 100 ms: one write per access log line
 * cost each call a thread-pool write and its wake-ups. Lines still buffered when the process
 * exits are written synchronously then (flushLogs, and on exit), warn and above at once; a
 * SIGKILL loses up to 100 ms of info lines.
 *
 * The lines wait in an array joined once per block rather than in sonic-boom's own buffer:
 * sonic-boom measures its growing buffer's UTF-8 length at each line it appends, which makes
 * V8 copy the whole buffer into one flat string each time (kilobytes of garbage per line). A
 * full block starts a write at once (it reaches sonic-boom's minLength); a partial one, handed
 * over by the timer or a flush, waits in sonic-boom for its periodic flush or is written by
 * flushSync (never by an asynchronous write that a process about to exit would not finish). As
 * with sonic-boom alone, a block whose asynchronous write is still out during a flushSync lands
 * after the lines that flushSync writes.
 */
export function stdoutInBlocks(dest: number | string = 1): DestinationStream & { flushSync(): void } {
  const sonic = pino.destination({ dest, sync: false, minLength: BLOCK_CHARS, periodicFlush: BLOCK_WAIT_MS });
  let lines: string[] = [];
  let chars = 0;
  const handOver = () => {
    if (chars === 0) return;
    const block = lines.join("");
    lines = [];
    chars = 0;
    sonic.write(block);
  };
  setInterval(handOver, BLOCK_WAIT_MS).unref();
  const blocks = {
    write(line: string) {
      lines.push(line);
      chars += line.length;
      if (chars >= BLOCK_CHARS) handOver();
    },
    flushSync() {
      handOver();
      flushSync(sonic);
    },
  };
  // pino writes its stream's buffer on exit; the lines still here are handed to it first.
  process.once("exit", () => blocks.flushSync());
  return blocks;
}

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
