/**
 * How numbers and times read on the pages. Times are Malaysia time (UTC+8 all year, no DST),
 * the zone the billing rules use, always labelled "MYT".
 */
const MYT_OFFSET_MS = 8 * 3600 * 1000;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * `n` rounded to `digits` (at most 6) decimals, half away from zero on its shortest decimal
 * form (as Intl rounds: 1000.005 gives 1,000.01), en-US style ("12,345.60"), with at least
 * `minDigits` of them. Written out rather than with Intl.NumberFormat / toLocaleString: their
 * first use loads ICU's locale data, ~6–8 MiB more RSS in each server process that serves a
 * page (bench/README.md, "Each worker holding 400 × 5"). From 1e21 on (and for NaN or
 * ±Infinity), where String() writes an exponent, Intl writes it.
 */
function enUs(n: number, digits: number, minDigits: number): string {
  const abs = Math.abs(n);
  if (!(abs < 1e21))
    return n.toLocaleString("en-US", { minimumFractionDigits: minDigits, maximumFractionDigits: digits });
  // Below 1e-6 String() writes an exponent too; such a value rounds to 0 at 6 decimals or fewer.
  const [whole, fraction = ""] = (abs < 1e-6 ? "0" : String(abs)).split(".") as [string, string?];
  let units = BigInt(whole + fraction.slice(0, digits).padEnd(digits, "0"));
  if ((fraction[digits] ?? "0") >= "5") units += 1n;
  const text = units.toString().padStart(digits + 1, "0");
  let kept = text.slice(text.length - digits);
  while (kept.length > minDigits && kept.endsWith("0")) kept = kept.slice(0, -1);
  const grouped = text.slice(0, text.length - digits).replace(/\B(?=(\d{3})+$)/g, ",");
  const sign = n < 0 || Object.is(n, -0) ? "-" : "";
  return `${sign}${grouped}${kept ? `.${kept}` : ""}`;
}

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
  return enUs(n, 0, 0);
}

/** "+1,000" / "−20" / "0": a signed ledger change. */
export function formatDelta(n: number): string {
  if (n === 0) return "0";
  return (n > 0 ? "+" : "\u2212") + enUs(Math.abs(n), 0, 0);
}

/** A price with sensible precision: 64,210.50 / 1.2345 / 0.00001234. */
export function formatPrice(price: number): string {
  const abs = Math.abs(price);
  if (abs >= 1000) return enUs(price, 2, 2);
  if (abs >= 1) return enUs(price, 4, 0);
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
