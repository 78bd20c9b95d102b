/**
 * Time in the product's business zone. Malaysia Time is UTC+8 all year (no DST), so a fixed
 * offset is exact and needs no tz database (PGlite and minimal images may lack one).
 */
export type Clock = () => number;

/** The real clock: Unix epoch milliseconds. */
export const systemClock: Clock = () => Date.now();

const MYT_OFFSET_MS = 8 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;

/**
 * The ISO date (YYYY-MM-DD) of a MYT day number, remembered for the last day asked: every paid
 * call formats its day and month, and formatting a Date was a visible share of a call's CPU.
 */
let lastDayNumber = NaN;
let lastDayText = "";
function mytDate(epochMs: number): string {
  const dayNumber = Math.floor((epochMs + MYT_OFFSET_MS) / DAY_MS);
  if (dayNumber !== lastDayNumber) {
    lastDayText = new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
    lastDayNumber = dayNumber;
  }
  return lastDayText;
}

/** Calendar day in MYT as YYYY-MM-DD. */
export function mytDay(epochMs: number): string {
  return mytDate(epochMs);
}

/** First day of the MYT month as YYYY-MM-01. */
export function mytMonth(epochMs: number): string {
  return `${mytDate(epochMs).slice(0, 8)}01`;
}

/** The next 00:00 MYT strictly after epochMs, as epoch ms. */
export function nextMytMidnight(epochMs: number): number {
  const local = epochMs + MYT_OFFSET_MS;
  return Math.floor(local / DAY_MS) * DAY_MS + DAY_MS - MYT_OFFSET_MS;
}

/** 00:00 MYT on the 1st of the next month, as epoch ms. */
export function nextMytMonthStart(epochMs: number): number {
  const local = new Date(epochMs + MYT_OFFSET_MS);
  return Date.UTC(local.getUTCFullYear(), local.getUTCMonth() + 1, 1) - MYT_OFFSET_MS;
}

/** "2026-11-22 08:00 MYT": a MYT wall-clock time for people (alerts, pages). */
export function formatMyt(epochMs: number): string {
  return `${new Date(epochMs + MYT_OFFSET_MS).toISOString().slice(0, 16).replace("T", " ")} MYT`;
}

/** "2026-11-24T00:00:00+08:00": an instant as ISO-8601 in MYT, to the second (for API bodies). */
export function mytIso(epochMs: number): string {
  return `${new Date(epochMs + MYT_OFFSET_MS).toISOString().slice(0, 19)}+08:00`;
}
