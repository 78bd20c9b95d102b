/**
 * Payments on the web: the account page's Buy / Subscribe / Manage billing forms
 * (`/account/buy`, `/account/subscribe`, `/account/billing-portal`: session, Origin and CSRF
 * checked by the page kit, then a 303 to Stripe) and `POST /webhooks/stripe`, the one POST
 * without a session, which accepts nothing that Stripe has not signed.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { AccountSummary } from "../../accounts/accounts.ts";
import { errorBodyOf } from "../../errors.ts";
import { MAX_WEBHOOK_BYTES } from "../../payments/webhook.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { methodNotAllowed, type PageKit, type WebContext, type WebEnv } from "../page-kit.ts";
import {
  buyPack,
  openBillingPortal,
  type PaymentFormResult,
  type PaymentRouteDeps,
  stripeWebhookAnswer,
  subscribe,
} from "../payment-actions.ts";

type FormAction = (
  deps: PaymentRouteDeps,
  account: AccountSummary,
  form: URLSearchParams,
) => Promise<PaymentFormResult>;

/** Routes of the payment forms and the Stripe webhook; `payments.stripe` is null when payments are off. */
export function paymentRoutes(kit: PageKit): Hono<WebEnv> {
  const { payments } = kit;
  const app = new Hono<WebEnv>();

  /** Answers a payment form post with the action's redirect or message page. */
  const formPost = (action: FormAction) => async (c: WebContext) => {
    const signed = c.get("signed")!;
    const result = await action(payments, signed.summary, c.get("form"));
    if (result.kind === "redirect") return kit.seeOther(c, result.location);
    return kit.page(
      c,
      result.status,
      renderMessagePage(signed.ctx, result.title, result.message, { href: "/account", text: "Back to your account" }),
    );
  };

  // Buying and subscribing need a confirmed email; the portal manages what was already bought.
  const forms: Array<[string, FormAction, boolean]> = [
    ["/account/buy", buyPack, true],
    ["/account/subscribe", subscribe, true],
    ["/account/billing-portal", (deps, account) => openBillingPortal(deps, account), false],
  ];
  for (const [path, action, needsVerifiedEmail] of forms) {
    if (needsVerifiedEmail) app.post(path, kit.memberForm, kit.verifiedEmail, formPost(action));
    else app.post(path, kit.memberForm, formPost(action));
    app.all(path, methodNotAllowed(kit, "POST"));
  }

  // Stripe signs the exact bytes it sent: the body is read raw, before anything parses it.
  const webhookJson = (c: WebContext, status: number, body: Record<string, unknown>) =>
    c.json(body, status as 200, { "cache-control": "no-store" });
  const webhookLimit = bodyLimit({
    maxSize: MAX_WEBHOOK_BYTES,
    onError: (c) =>
      webhookJson(c as WebContext, 413, { ...errorBodyOf("payload_too_large", "The body is too large.") }),
  });
  app.post("/webhooks/stripe", webhookLimit, async (c) => {
    const rawBody = Buffer.from(await c.req.arrayBuffer());
    const answer = await stripeWebhookAnswer(payments, { rawBody, signature: c.req.header("stripe-signature") });
    return webhookJson(c, answer.status, answer.body);
  });
  // With payments off the path does not exist (the POST above answers 404 too).
  if (payments.stripe) app.all("/webhooks/stripe", methodNotAllowed(kit, "POST"));
  return app;
}
