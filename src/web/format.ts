/**
 * How numbers and times read on the pages. Times are Malaysia time (UTC+8 all year, no DST),
 * the zone the billing rules use, always labelled "MYT".
 */
const MYT_OFFSET_MS = 8 * 3600 * 1000;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const integerFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** "1 Dec 2026 00:00 MYT". */
export function formatMyt(epochMs: number): string {
  const d = new Date(epochMs + MYT_OFFSET_MS);
  const hh = String(d.getUTCHours()).padStart(2, "0");
  const mm = String(d.getUTCMinutes()).padStart(2, "0");
  return `${formatMytDate(epochMs)} ${hh}:${mm} MYT`;
}

/** "1 Dec 2026": the MYT calendar day of a time. */
export function formatMytDate(epochMs: number): string {
  const d = new Date(epochMs + MYT_OFFSET_MS);
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

/** "24 Nov" from a day written "2026-11-24". */
export function shortDay(day: string): string {
  const [, month, date] = day.split("-").map(Number);
  return `${date} ${MONTHS[month! - 1]}`;
}

/** "in 7 h 59 min", "in 3 days 4 h" (coarse; the absolute time is shown beside it). */
export function formatIn(ms: number): string {
  const minutes = Math.max(0, Math.ceil(ms / 60_000));
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const mins = minutes % 60;
  if (days > 0) return `in ${days} day${days === 1 ? "" : "s"} ${hours} h`;
  if (hours > 0) return `in ${hours} h ${mins} min`;
  return `in ${mins} min`;
}

/** "10,000". */
export function formatInteger(n: number): string {
  return integerFormat.format(n);
}

/** "+1,000" / "−20" / "0": a signed ledger change. */
export function formatDelta(n: number): string {
  if (n === 0) return "0";
  return (n > 0 ? "+" : "\u2212") + integerFormat.format(Math.abs(n));
}

/** A price with sensible precision: 64,210.50 / 1.2345 / 0.00001234. */
export function formatPrice(price: number): string {
  const abs = Math.abs(price);
  if (abs >= 1000) return price.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  if (abs >= 1) return price.toLocaleString("en-US", { maximumFractionDigits: 4 });
  return price.toPrecision(4);
}

/** "+1.23%" / "−4.50%", or "–" when there is nothing to show. */
export function formatPercent(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "\u2013";
  const text = `${Math.abs(value).toFixed(2)}%`;
  if (Number(Math.abs(value).toFixed(2)) === 0) return "0.00%";
  return (value > 0 ? "+" : "\u2212") + text;
}

/** Human name of a plan. */
export function planName(plan: string): string {
  if (plan === "node") return "Node";
  if (plan === "founding_seat") return "Founding seat";
  return plan;
}
