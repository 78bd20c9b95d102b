/**
 * Reading the fields this service needs from Stripe objects. Webhook payloads are signed, but
 * their shape varies with the account's API version (for example an invoice names its
 * subscription in `parent.subscription_details` since 2025-03-31, in `subscription` before),
 * so each reader accepts both and returns null rather than throwing on a missing field.
 */
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A nested value by path, or undefined. */
export function at(value: unknown, ...path: (string | number)[]): unknown {
  let v: unknown = value;
  for (const key of path) {
    if (Array.isArray(v) && typeof key === "number") v = v[key];
    else if (isObj(v) && typeof key === "string") v = v[key];
    else return undefined;
  }
  return v;
}

/** A string field, or the `id` of an expanded object, or null. */
export function idOf(value: unknown): string | null {
  if (typeof value === "string" && value !== "") return value;
  if (isObj(value) && typeof value.id === "string") return value.id;
  return null;
}

export const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null);
export const int = (value: unknown): number | null =>
  typeof value === "number" && Number.isSafeInteger(value) ? value : null;
/** Stripe timestamps are seconds; ours are ms. */
export const seconds = (value: unknown): number | null => (int(value) === null ? null : int(value)! * 1000);

/** A positive whole number written in metadata, or null. */
export function metadataInt(value: unknown, max: number): number | null {
  const raw = text(value);
  if (raw === null || !/^\d{1,15}$/.test(raw)) return null;
  const n = Number(raw);
  return n >= 1 && n <= max ? n : null;
}

/** Lines of an invoice (the first page Stripe embeds in the event). */
export function invoiceLines(invoice: unknown): unknown[] {
  const data = at(invoice, "lines", "data");
  return Array.isArray(data) ? data : [];
}

/** The subscription an invoice belongs to. */
export function invoiceSubscription(invoice: unknown): string | null {
  return idOf(at(invoice, "parent", "subscription_details", "subscription")) ?? idOf(at(invoice, "subscription"));
}

/** Metadata of the invoice's subscription (a snapshot Stripe copies onto the invoice). */
export function invoiceSubscriptionMetadata(invoice: unknown): Obj {
  const m =
    at(invoice, "parent", "subscription_details", "metadata") ?? at(invoice, "subscription_details", "metadata");
  return isObj(m) ? m : {};
}

/** Price id of an invoice line (new `pricing.price_details.price`, or the older `price.id`). */
export function linePrice(line: unknown): string | null {
  return idOf(at(line, "pricing", "price_details", "price")) ?? idOf(at(line, "price"));
}

/** Price id of a subscription's first item. */
export function subscriptionPrice(subscription: unknown): string | null {
  return idOf(at(subscription, "items", "data", 0, "price"));
}

/** End of the subscription's current period (items since 2025-03-31, the subscription before). */
export function subscriptionPeriodEnd(subscription: unknown): number | null {
  return (
    seconds(at(subscription, "items", "data", 0, "current_period_end")) ??
    seconds(at(subscription, "current_period_end"))
  );
}
