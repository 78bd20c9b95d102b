/**
 * The tamper-evident log of live signal events (docs/track-record.md, "Tamper-evident history").
 * Every live event's hash covers the previous live event's hash and the event itself, so editing,
 * removing or reordering any published event changes every hash after it. Pure: the same code
 * chains the events in the market's transaction (store.ts), writes the members' log file (web)
 * and checks a file (`signals verify-log`).
 */
import { createHash } from "node:crypto";
import { isTimeframe, TIMEFRAME_MS } from "./timeframes.ts";

/** The predecessor of the first event: 64 zeros. */
export const GENESIS_HASH = "0".repeat(64);

/** The part of a signal event the chain vouches for. */
export interface ChainedEventFields {
  readonly symbol: string;
  readonly tf: string;
  readonly signal: string;
  /** When the signal was confirmed: the close time (epoch ms) of the candle that set it. */
  readonly confirmedAt: number;
  /** Close of that candle. */
  readonly price: number;
  readonly defense: number | null;
}

/** One line of the log: the event, its predecessor's hash and its own. */
export interface ChainEntry extends ChainedEventFields {
  readonly id: string;
  readonly prev: string;
  readonly hash: string;
}

/** The close time of the candle that opened at `candleOpenTime` on `tf`. */
export function confirmedAtOf(tf: string, candleOpenTime: number): number {
  if (!isTimeframe(tf)) throw new RangeError(`unknown timeframe ${tf}`);
  return candleOpenTime + TIMEFRAME_MS[tf];
}

/**
 * The canonical text of an event: a JSON array in a fixed order
 * [symbol, tf, signal, confirmedAt, price, defense], numbers as JSON writes them (the shortest
 * text that reads back as the same double), null for no defense.
 */
export function canonicalEvent(e: ChainedEventFields): string {
  return JSON.stringify([e.symbol, e.tf, e.signal, e.confirmedAt, e.price, e.defense]);
}

/** SHA-256 (hex) of the previous hash, a newline and the canonical event. */
export function chainHash(prev: string, e: ChainedEventFields): string {
  return createHash("sha256")
    .update(`${prev}\n${canonicalEvent(e)}`)
    .digest("hex");
}

/** The first 8 characters of an event's hash, as the alerts carry it. */
export function shortHash(hash: string): string {
  return hash.slice(0, 8);
}

/** The log as a file: one JSON object a line, oldest first. */
export function formatChainLog(entries: readonly ChainEntry[]): string {
  const line = (e: ChainEntry) => {
    const { id, symbol, tf, signal, confirmedAt, price, defense, prev, hash } = e;
    return `${JSON.stringify({ id, symbol, tf, signal, confirmedAt, price, defense, prev, hash })}\n`;
  };
  return entries.map(line).join("");
}

/** Where a log stops being a chain, or that it is one. */
export type ChainVerdict =
  | { readonly ok: true; readonly events: number; readonly head: string }
  | {
      readonly ok: false;
      readonly events: number;
      readonly line: number;
      readonly id: string | null;
      readonly reason: string;
    };

function parseLine(text: string): ChainEntry | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "not JSON";
  }
  if (typeof value !== "object" || value === null) return "not an object";
  const o = value as Record<string, unknown>;
  for (const key of ["id", "symbol", "tf", "signal", "prev", "hash"] as const)
    if (typeof o[key] !== "string") return `"${key}" is not a string`;
  if (typeof o.confirmedAt !== "number" || typeof o.price !== "number")
    return `"confirmedAt" and "price" must be numbers`;
  if (o.defense !== null && typeof o.defense !== "number") return `"defense" must be a number or null`;
  return o as unknown as ChainEntry;
}

/**
 * Recomputes the chain of a log file's text and names the first line where it breaks: a line
 * whose `prev` is not the previous line's hash (an event removed, inserted or moved) or whose
 * hash is not the hash of its own content (an event edited). Empty lines are ignored.
 */
export function verifyChainLog(text: string): ChainVerdict {
  let prev = GENESIS_HASH;
  let events = 0;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() === "") continue;
    const line = i + 1;
    const entry = parseLine(lines[i]!);
    if (typeof entry === "string") return { ok: false, events, line, id: null, reason: `unreadable line: ${entry}` };
    if (entry.prev !== prev) {
      return {
        ok: false,
        events,
        line,
        id: entry.id,
        reason:
          `its previous hash ${shortHash(entry.prev)}… is not the hash of the event before ` +
          `it (${shortHash(prev)}…): an event was removed, inserted or moved here`,
      };
    }
    const expected = chainHash(prev, entry);
    if (entry.hash !== expected)
      return {
        ok: false,
        events,
        line,
        id: entry.id,
        reason:
          `its content hashes to ${shortHash(expected)}…, not the recorded ` +
          `${shortHash(entry.hash)}…: the event was edited`,
      };
    prev = entry.hash;
    events++;
  }
  return { ok: true, events, head: prev };
}
