/**
 * The few ways a page answers: an HTML page, a 303 redirect, a refused form, and a refusal
 * (429 or 503 with Retry-After) shown as a message. Pages are never cached: they carry CSRF
 * tokens and account data.
 */
import type { Context } from "hono";
import { type PageContext, renderMessagePage } from "./auth-pages.ts";

/** A request the site turns away for now (an attempt budget, the hashing queue): what the form page shows. */
export interface Refusal {
  readonly refused: true;
  readonly status: 429 | 503;
  readonly message: string;
  readonly headers: Record<string, string>;
}

/** True for a Refusal (routes return it from the same work that may succeed). */
export function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && (value as { refused?: unknown }).refused === true;
}

/** An HTML page. */
export function page(c: Context, status: number, body: string, headers: Record<string, string> = {}): Response {
  return c.body(body, status as 200, {
    ...headers,
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
  });
}

/** 303 See Other to a path of this site or a Stripe page (after a POST, the browser follows with a GET). */
export function seeOther(c: Context, location: string): Response {
  return c.body(null, 303, { location, "cache-control": "no-store", "content-length": "0" });
}

/** 403 for a form that did not come from this site (Origin or CSRF token), or has expired. */
export function refuse(c: Context, ctx: PageContext): Response {
  return page(
    c,
    403,
    renderMessagePage(
      ctx,
      "Form refused",
      "This form did not come from this site, or it has expired. Nothing " +
        "was changed. Go back, reload the page and try again.",
    ),
  );
}

/** A refusal shown as a message page (for forms that have no page of their own to show it on). */
export function refusalPage(
  c: Context,
  ctx: PageContext,
  title: string,
  refusal: Refusal,
  back: { href: string; text: string },
): Response {
  return page(c, refusal.status, renderMessagePage(ctx, title, refusal.message, back), refusal.headers);
}
