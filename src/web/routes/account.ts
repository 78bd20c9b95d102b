/**
 * The member's own account: `/account` (balance, ledger, alert settings, the payments card),
 * `/account/key` (regenerate the API key, or create the first one once a plan is paid), `/account/key/new`
 * (the new key's one display) and `/account/alerts`. The account comes from the session only:
 * there is no account id in any URL or form.
 */
import { Hono } from "hono";
import { getCookie } from "hono/cookie";
import { activeKeyId, getAccountSummary, regenerateKeyIfCurrent } from "../../accounts/accounts.ts";
import { secretsEqual } from "../../accounts/api-key.ts";
import { mayCallPaidEndpoint, viewerOf } from "../../accounts/entitlement.ts";
import { activeKeyTimes } from "../../accounts/key-last-used.ts";
import { createKeyReveal, KEY_REVEAL_TTL_MS, keyRevealWaiting, takeKeyReveal } from "../../accounts/key-reveal.ts";
import {
  AlertSettingsError,
  clearAlertSettings,
  getAlertSettings,
  parseAlertSettings,
  saveAlertSettings,
} from "../../alerts/settings.ts";
import { allLedgerRows, dailyUsage, ledgerPage } from "../../billing/ledger-history.ts";
import { applyMonthlyGrant } from "../../billing/tokens.ts";
import { mytDay } from "../../clock.ts";
import { errorSummary } from "../../logger.ts";
import type { PaidPlan } from "../../payments/checkout.ts";
import {
  type AccountView,
  renderAccountPage,
  renderKeyConfirmPage,
  renderKeyGonePage,
  renderNewKeyPage,
} from "../account-page.ts";
import { renderMessagePage } from "../auth-pages.ts";
import { keyConfirmToken } from "../csrf.ts";
import { ledgerCsvStream } from "../ledger-csv.ts";
import { planPriceText } from "../offer.ts";
import { methodNotAllowed, type PageKit, type Signed, type WebContext, type WebEnv } from "../page-kit.ts";
import { billingView } from "../payment-actions.ts";
import { takeTelegramTestResult, telegramView } from "./telegram.ts";

const LEDGER_ROWS = 20;
const USAGE_DAYS = 30;

/** `?ledger_before=`: absent, or the positive id a previous page linked to; undefined when malformed. */
function ledgerBefore(raw: string | undefined): number | null | undefined {
  if (raw === undefined) return null;
  if (!/^[1-9][0-9]{0,15}$/.test(raw)) return undefined;
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : undefined;
}
/** The cookie holding the token that opens the one display of a new key. */
const KEY_REVEAL_COOKIE = "key_reveal";

/** The account page's notice after each way of arriving there: the query flag (and its value, when it matters). */
const FLASHES: ReadonlyArray<readonly [flag: string, value: string | null, text: string]> = [
  ["alerts-saved", null, "Alert settings saved."],
  ["alerts-stopped", null, "Alerts stopped."],
  ["telegram-connected", null, "Telegram connected."],
  ["verify-sent", null, "A new confirmation link is on its way to your email address."],
  ["telegram-disconnected", null, "Telegram disconnected: no more alerts go to that chat."],
  [
    "checkout",
    "success",
    "Thank you. Stripe is confirming your payment; your Tokens or plan appear here as soon as it has.",
  ],
  ["checkout", "cancelled", "Checkout cancelled. Nothing was charged."],
];

function flashOf(c: WebContext): string | null {
  const found = FLASHES.find(([flag, value]) =>
    value === null ? c.req.query(flag) !== undefined : c.req.query(flag) === value,
  );
  return found?.[2] ?? null;
}

const BACK_TO_ACCOUNT = { href: "/account", text: "Back to your account" };

/** Routes of `/account`, `/account/ledger.csv`, `/account/key`, `/account/key/new` and `/account/alerts`. */
export function accountRoutes(kit: PageKit): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  const accountView = accountViews(kit);
  accountPageRoutes(kit, app, accountView);
  ledgerDownloadRoutes(kit, app);
  keyRoutes(kit, app);
  newKeyRoutes(kit, app);
  alertSettingsRoutes(kit, app, accountView);
  return app;
}

type AccountViewOf = (signed: Signed, extra?: Partial<AccountView>, before?: number | null) => Promise<AccountView>;

/** What the account page shows a member: balance, ledger page, usage, keys, alerts, billing, Telegram. */
function accountViews(kit: PageKit): AccountViewOf {
  const { config, db, clock } = kit.deps;

  /** The plans' prices for the Subscribe buttons, as Stripe charges them. */
  async function planPriceTexts(): Promise<Record<PaidPlan, string | null>> {
    const offer = await kit.offer();
    const text = (plan: PaidPlan) => planPriceText(offer.plans.find((p) => p.plan === plan)?.price ?? null);
    return { node: text("node"), founding_seat: text("founding_seat") };
  }

  return async (signed, extra = {}, before = null) => {
    const now = clock();
    const accountId = signed.session.accountId;
    return {
      summary: signed.summary,
      now,
      dailyCap: config.limits.dailyCap,
      monthlyGrant: config.limits.monthlyGrant,
      ledger: await ledgerPage(db, accountId, before, LEDGER_ROWS),
      ledgerBefore: before,
      usage: await dailyUsage(db, accountId, now, USAGE_DAYS),
      keyTimes: await activeKeyTimes(db, accountId),
      lastUsedWindowMs: config.keyLastUsedFlushMs,
      alerts: await getAlertSettings(db, signed.session.accountId),
      billing: billingView(kit.payments, signed.summary, signed.ctx.signedIn.csrfToken, await planPriceTexts()),
      telegram: telegramView(kit, signed, null),
      ...extra,
    };
  };
}

function accountPageRoutes(kit: PageKit, app: Hono<WebEnv>, accountView: AccountViewOf): void {
  const { config, db, clock } = kit.deps;
  app.get("/account", kit.session, async (c) => {
    let signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/account");
    const before = ledgerBefore(c.req.query("ledger_before"));
    if (before === undefined) {
      return kit.page(
        c,
        400,
        renderMessagePage(
          signed.ctx,
          "No such ledger page",
          "The ledger_before value must be a ledger line number from an “Older entries” link.",
          BACK_TO_ACCOUNT,
        ),
      );
    }
    // The month's grant is applied lazily; applying it here shows the balance the next call sees.
    await applyMonthlyGrant(db, signed.session.accountId, config.limits, clock());
    signed = { ...signed, summary: await getAccountSummary(db, signed.session.accountId, clock()) };
    const telegram = telegramView(kit, signed, takeTelegramTestResult(kit, c));
    return kit.page(
      c,
      200,
      renderAccountPage(signed.ctx, await accountView(signed, { flash: flashOf(c), telegram }, before), [
        kit.assets.url("telegram.js"),
      ]),
    );
  });
  app.all("/account", methodNotAllowed(kit, "GET"));
}

/** Every ledger row, one per call, read and sent a page at a time. */
function ledgerDownloadRoutes(kit: PageKit, app: Hono<WebEnv>): void {
  const { db, clock, logger } = kit.deps;
  app.get("/account/ledger.csv", kit.session, (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/account/ledger.csv");
    const accountId = signed.session.accountId;
    const failed = (err: unknown) =>
      logger.error({ err: errorSummary(err), accountId }, "ledger CSV download broke off");
    return c.body(ledgerCsvStream(allLedgerRows(db, accountId), failed), 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="ledger-${mytDay(clock())}.csv"`,
      "cache-control": "no-store",
    });
  });
  app.all("/account/ledger.csv", methodNotAllowed(kit, "GET"));
}

/** Regenerating the API key: a confirmation page, then POST -> 303 -> its one display. */
function keyRoutes(kit: PageKit, app: Hono<WebEnv>): void {
  const { db, clock, logger } = kit.deps;
  app.get("/account/key", kit.session, async (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/account/key");
    if (!signed.summary.emailVerified) return kit.refuseUnverified(c, signed);
    const confirm = keyConfirmToken(signed.session.csrfSecret, await activeKeyId(db, signed.session.accountId));
    return kit.page(c, 200, renderKeyConfirmPage(signed.ctx, signed.summary.keyPrefix, confirm));
  });

  // POST -> 303 -> GET: the answer to the POST carries no key, so a reload never re-sends it.
  app.post("/account/key", kit.memberForm, kit.verifiedEmail, async (c) => {
    const signed = c.get("signed")!;
    const accountId = signed.session.accountId;
    const submitted = c.get("form").get("confirm") ?? "";
    if (submitted === "") return kit.seeOther(c, "/account/key");
    if (signed.summary.keyPrefix === "" && !mayCallPaidEndpoint(viewerOf(signed.summary, clock()))) {
      return kit.page(
        c,
        403,
        renderMessagePage(
          signed.ctx,
          "Subscribe first",
          "An API key is made once your plan is paid. Subscribe on your account page.",
          BACK_TO_ACCOUNT,
        ),
      );
    }
    // Each confirmation replaces one given key: sent again (a reload, Back, a double click), it no
    // longer matches, and regenerateKeyIfCurrent re-checks under the account's lock.
    const replaces = await activeKeyId(db, accountId);
    const apiKey = secretsEqual(keyConfirmToken(signed.session.csrfSecret, replaces), submitted)
      ? await regenerateKeyIfCurrent(db, accountId, replaces, clock())
      : null;
    if (apiKey === null) {
      // A double click: the first POST's key has not been shown yet, so show it (to the browser holding its cookie).
      if (await keyRevealWaiting(db, accountId, clock())) return kit.seeOther(c, "/account/key/new");
      return kit.page(
        c,
        409,
        renderMessagePage(
          signed.ctx,
          "Already confirmed",
          "This confirmation was already used, so your key was not changed " +
            "again. The key shown after it is the one that works.",
          BACK_TO_ACCOUNT,
        ),
      );
    }
    logger.info({ accountId }, "api key regenerated from the account page");
    kit.setCookie(
      c,
      KEY_REVEAL_COOKIE,
      await createKeyReveal(db, accountId, apiKey, clock()),
      KEY_REVEAL_TTL_MS / 1000,
    );
    return kit.seeOther(c, "/account/key/new");
  });
  app.all("/account/key", methodNotAllowed(kit, "GET, POST"));
}

/** The one page that shows a full key, once: the record is deleted as it is read (no-store page). */
function newKeyRoutes(kit: PageKit, app: Hono<WebEnv>): void {
  const { config, db, clock } = kit.deps;
  app.get("/account/key/new", kit.session, async (c) => {
    const signed = c.get("signed");
    if (signed === null) return kit.toSignIn(c, "/account");
    const token = getCookie(c, KEY_REVEAL_COOKIE);
    const apiKey = await takeKeyReveal(db, signed.session.accountId, token, clock());
    if (token !== undefined) kit.setCookie(c, KEY_REVEAL_COOKIE, "", 0);
    if (apiKey === null) return kit.page(c, 410, renderKeyGonePage(signed.ctx));
    return kit.page(c, 200, renderNewKeyPage(signed.ctx, apiKey, [kit.assets.url("account.js")], config.publicBaseUrl));
  });
  app.all("/account/key/new", methodNotAllowed(kit, "GET"));
}

/** Saving or stopping the member's alert settings (a form on the account page). */
function alertSettingsRoutes(kit: PageKit, app: Hono<WebEnv>, accountView: AccountViewOf): void {
  const { db } = kit.deps;
  app.post("/account/alerts", kit.memberForm, async (c) => {
    const signed = c.get("signed")!;
    const form = c.get("form");
    const accountId = signed.session.accountId;
    if (form.get("action") === "clear") {
      await clearAlertSettings(db, accountId);
      return kit.seeOther(c, "/account?alerts-stopped");
    }
    const input = {
      chatId: (form.get("chat_id") ?? "").slice(0, 64),
      symbols: (form.get("symbols") ?? "").slice(0, 800),
      timeframes: form.getAll("timeframes").slice(0, 10),
    };
    try {
      // An empty chat id keeps the chat connected through Telegram (or none yet).
      const chatId =
        input.chatId.trim() === "" ? ((await getAlertSettings(db, accountId))?.chatId ?? null) : input.chatId;
      const settings = parseAlertSettings({ ...input, chatId });
      await saveAlertSettings(db, accountId, settings);
      return kit.seeOther(c, "/account?alerts-saved");
    } catch (err) {
      if (!(err instanceof AlertSettingsError)) throw err;
      const view = await accountView(signed, { alertsForm: { ...input, error: `Not saved: ${err.message}.` } });
      return kit.page(c, 400, renderAccountPage(signed.ctx, view));
    }
  });
  app.all("/account/alerts", methodNotAllowed(kit, "POST"));
}
