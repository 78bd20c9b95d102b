/**
 * POST /webhooks/stripe: verify the signature on the raw body, then apply the event once.
 * 400 for anything unsigned, mis-signed or outside the timestamp tolerance (nothing changes);
 * 200 after the effect has committed (or for events this service does not use); 500 when the
 * effect failed, so Stripe retries, and the retry applies it exactly once.
 */
import type Stripe from "stripe";
import { errorSummary } from "../logger.ts";
import type { StripeSettings } from "./config.ts";
import { type EventDeps, handleStripeEvent, NotYetMatched } from "./event-handlers.ts";
import type { StripeClient } from "./stripe-client.ts";

/** Largest webhook body accepted (Stripe events are a few KB; invoices with many lines more). */
export const MAX_WEBHOOK_BYTES = 1024 * 1024;

export interface WebhookDeps extends EventDeps {
  readonly stripe: StripeClient;
  readonly settings: StripeSettings;
}

export interface WebhookAnswer {
  readonly status: 200 | 400 | 500;
  readonly body: Record<string, unknown>;
}

/** Verifies and applies one webhook delivery. */
export async function handleStripeWebhook(
  deps: WebhookDeps,
  request: { rawBody: Buffer; signature: string | undefined },
): Promise<WebhookAnswer> {
  let event: Stripe.Event;
  const stripe = await deps.stripe();
  const nowS = Math.floor(deps.now() / 1000);
  try {
    // The library refuses signatures older than the tolerance; one from further in the future
    // than that is as suspect (a clock that far off, or a forged time), so it is refused too.
    const signedAt = /(?:^|,)\s*t=(\d{1,12})(?:,|$)/.exec(request.signature ?? "");
    if (signedAt && Number(signedAt[1]) > nowS + deps.settings.webhookToleranceS)
      throw new Error("signature timestamp in the future");
    event = stripe.webhooks.constructEvent(
      request.rawBody,
      request.signature ?? "",
      deps.settings.webhookSecret,
      deps.settings.webhookToleranceS,
      undefined,
      deps.now(), // milliseconds: the library divides by 1000
    );
  } catch {
    // The library's message can quote the header; neither it nor the body is logged.
    deps.logger.warn(
      { bytes: request.rawBody.length, signed: request.signature !== undefined },
      "stripe webhook refused: signature not valid",
    );
    return {
      status: 400,
      body: {
        ok: false,
        error: "invalid_signature",
        message: "The Stripe-Signature header does not verify for this body and time.",
      },
    };
  }
  try {
    const handled = await handleStripeEvent(deps, event);
    return { status: 200, body: { received: true, handled } };
  } catch (err) {
    if (err instanceof NotYetMatched) {
      deps.logger.warn(
        { eventId: event.id, type: event.type },
        `stripe event not applied yet: ${err.message}; Stripe will retry`,
      );
      return {
        status: 500,
        body: {
          ok: false,
          error: "not_yet_matched",
          message: "The event's account is not known yet; it will be retried.",
        },
      };
    }
    deps.logger.error(
      { eventId: event.id, type: event.type, err: errorSummary(err) },
      "stripe webhook failed; Stripe will retry",
    );
    return {
      status: 500,
      body: { ok: false, error: "internal", message: "The event could not be applied; it will be retried." },
    };
  }
}
