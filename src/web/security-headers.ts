/**
 * The security headers of every page (Content-Security-Policy among them).
 */
import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { Config } from "../config.ts";

/** Stripe's hosted pages a payment form's 303 leads to (form-action covers redirects). */
const STRIPE_FORM_TARGETS = ["https://checkout.stripe.com", "https://billing.stripe.com"];

/** Where the Connect Telegram form's redirect leads (alerts/telegram-connect.ts builds the link). */
const TELEGRAM_LINK_ORIGIN = "https://t.me";

/**
 * Sent with every page. Scripts and styles only from our own origin (files, no inline code),
 * no framing, no referrer to other sites (setup links carry a token in the URL). HSTS stays the
 * TLS proxy's decision (includeSubDomains would reach the operator's other hosts). Forms may
 * lead to Stripe's Checkout and Billing Portal; with STRIPE_API_BASE pointing elsewhere (a local
 * fake in tests), that origin serves the sessions' pages, so it is allowed too. With a Telegram
 * bot username set, the Connect form leads to https://t.me (its 303 is a form target too).
 */
export function pageSecurityHeaders(config: Config): MiddlewareHandler {
  const apiBase = config.payments.stripe?.apiBase.url;
  const paymentOrigins =
    apiBase && apiBase !== "https://api.stripe.com" ? [...STRIPE_FORM_TARGETS, apiBase] : STRIPE_FORM_TARGETS;
  const telegramOrigins = config.alerts.telegramBotUsername === null ? [] : [TELEGRAM_LINK_ORIGIN];
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'"],
      connectSrc: ["'self'"],
      formAction: ["'self'", ...paymentOrigins, ...telegramOrigins],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    referrerPolicy: "same-origin",
    xFrameOptions: "DENY",
    crossOriginOpenerPolicy: "same-origin",
    strictTransportSecurity: false,
  });
}
