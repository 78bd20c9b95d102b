/**
 * The account page's Telegram card: the connected chat (masked), "Connect Telegram" (a one-time
 * t.me link), "Send a test alert" with Telegram's answer, "Disconnect", and the coins and
 * timeframes form with the manual chat id as a fallback. Pure rendering.
 */
import type { StoredAlertSettings } from "../alerts/settings.ts";
import { TIMEFRAMES } from "../market/timeframes.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { html, type SafeHtml } from "./html.ts";

/** Telegram's answer to the last test alert (shown once, after the POST's redirect). */
export type TelegramTestResult = { readonly accepted: true } | { readonly accepted: false; readonly error: string };

/** Why an account whose plan has no alerts gets none (the card's notice and the test alert's refusal). */
export const NO_ALERTS_IN_PLAN =
  "Signal alerts, and so test alerts, are part of the node and founding-seat plans " +
  "with an active subscription. Subscribe on your account page to receive them.";
/** Why a typed chat id gets no test alert. */
export const UNPROVEN_CHAT =
  "Test alerts go only to a chat connected with the Connect Telegram button (you " +
  "press Start in that chat, which proves it is yours), never to a chat id typed " +
  "in the form. To send one, disconnect this chat and connect it with the button.";

export interface TelegramView {
  /** A Connect button is offered: the bot's username is set and its updates are received. */
  readonly connectable: boolean;
  /** A test alert can be sent: a bot token is set. */
  readonly canSend: boolean;
  /** The member's plan has alerts (the entitlement rule): alerts and test alerts go out. */
  readonly alertsInPlan: boolean;
  readonly testResult: TelegramTestResult | null;
}

export interface AlertsCardView {
  readonly alerts: StoredAlertSettings | null;
  /** What the form shows after a refused change (the member's input and why). */
  readonly alertsForm?: { chatId: string; symbols: string; timeframes: readonly string[]; error: string };
  readonly telegram?: TelegramView;
}

/** A chat id as the page shows it: its last 4 characters (enough to recognise it, not to copy it). */
export function maskedChat(chatId: string): string {
  return "\u2022".repeat(4) + chatId.slice(-4);
}

function stateLine(alerts: StoredAlertSettings | null): SafeHtml {
  const chat = alerts?.chatId ?? null;
  const chosen = alerts !== null && alerts.symbols.length > 0 && alerts.timeframes.length > 0;
  const what = chosen ? `${alerts.symbols.join(", ")} on ${alerts.timeframes.join(", ")}` : "";
  if (chat !== null && chosen)
    return html`Alerts go to Telegram chat <code id="telegram-chat">${maskedChat(chat)}</code> for ${what}.`;
  if (chat !== null)
    return html`Telegram chat <code id="telegram-chat">${maskedChat(chat)}</code> is connected. Choose coins and \
timeframes below to receive alerts.`;
  if (chosen) return html`Telegram is not connected: alerts for ${what} are not sent until you connect a chat.`;
  return html`Alerts are off. Connect Telegram and choose coins and timeframes to receive each new signal as it is \
confirmed.`;
}

function testResultNotice(result: TelegramTestResult | null): SafeHtml | string {
  if (result === null) return "";
  return result.accepted
    ? html`<div class="notice ok" role="status" id="telegram-test-result">Telegram accepted the test alert: check the \
chat.</div>`
    : html`<div class="notice error" role="alert" id="telegram-test-result">Telegram did not accept the test alert \
(${result.error}). If you blocked the bot or deleted the chat, connect Telegram again.</div>`;
}

const csrfInput = (csrfToken: string) => html`<input type="hidden" name="${CSRF_FIELD}" value="${csrfToken}">`;

function chatActions(view: AlertsCardView, csrfToken: string): SafeHtml | string {
  const telegram = view.telegram;
  if (view.alerts?.chatId != null) {
    const testable = telegram?.canSend === true && telegram.alertsInPlan && view.alerts.chatVerified;
    return html`<div class="actions">
    ${
      testable
        ? html`<form method="post" action="/account/telegram/test">${csrfInput(csrfToken)}<button type="submit"
      id="telegram-test">Send a test alert</button></form>`
        : ""
    }
    <form method="post" action="/account/telegram/disconnect">${csrfInput(csrfToken)}<button type="submit"
    class="secondary" id="telegram-disconnect">Disconnect</button></form>
  </div>`;
  }
  if (!telegram?.connectable) return "";
  // A new tab for Telegram: this page stays open and notices the connection (telegram.js).
  return html`<form method="post" action="/account/telegram/connect" target="_blank" rel="noopener" class="actions"
    id="telegram-connect-form">
    ${csrfInput(csrfToken)}<button type="submit" id="telegram-connect">Connect Telegram</button>
  </form>
  <p class="muted">Telegram opens our bot: press <strong>Start</strong> there. This page shows the connection by \
itself within seconds, or <a href="/account#alerts-h" id="telegram-refresh">refresh it</a> after pressing Start.</p>
  <p id="telegram-waiting" role="status" aria-live="polite"></p>`;
}

/** The card. */
export function renderAlertsCard(view: AlertsCardView, csrfToken: string): SafeHtml {
  const form = view.alertsForm;
  const symbols = form?.symbols ?? view.alerts?.symbols.join(", ") ?? "";
  const chosen: readonly string[] = form?.timeframes ?? view.alerts?.timeframes ?? [];
  const connected = view.alerts?.chatId != null;
  // The manual chat id is the fallback: folded away when a tap can connect (or a chat is connected).
  const manualOpen = form?.chatId || (!connected && !view.telegram?.connectable);
  const unproven =
    connected && view.telegram?.canSend === true && view.telegram.alertsInPlan && !view.alerts!.chatVerified;
  return html`<section class="card wide" aria-labelledby="alerts-h">
  <h2 id="alerts-h">Message-app alerts</h2>
  ${
    view.telegram?.alertsInPlan === false
      ? html`<p class="notice warn"
    id="alerts-not-in-plan">${NO_ALERTS_IN_PLAN}</p>`
      : ""
  }
  <p id="telegram-state">${stateLine(view.alerts)}</p>
  ${unproven ? html`<p class="muted" id="telegram-unproven">${UNPROVEN_CHAT}</p>` : ""}
  ${testResultNotice(view.telegram?.testResult ?? null)}
  ${chatActions(view, csrfToken)}
  ${form ? html`<div class="notice error" role="alert" id="alerts-error">${form.error}</div>` : ""}
  <form class="stack" method="post" action="/account/alerts">
    ${csrfInput(csrfToken)}
    <div>
      <label for="symbols">Coins <span class="hint">Comma-separated codes, e.g. BTC, ETH.</span></label>
      <input id="symbols" name="symbols" type="text" autocomplete="off" autocapitalize="characters" maxlength="800"
      value="${symbols}">
    </div>
    <fieldset>
      <legend>Timeframes</legend>
      <div class="checks">
        ${TIMEFRAMES.map(
          (tf) => html`<label><input type="checkbox" name="timeframes"
          value="${tf}"${chosen.includes(tf) ? html` checked` : ""}> ${tf}</label>`,
        )}
      </div>
    </fieldset>
    <details${manualOpen ? html` open` : ""}>
      <summary>${connected ? "Use another chat id instead" : "Enter a chat id instead"}</summary>
      <div>
        <label for="chat_id">Telegram chat id <span class="hint">A number such as 123456789, or \
@channelname.${connected ? " Leave empty to keep the connected chat." : ""}</span></label>
        <input id="chat_id" name="chat_id" type="text" inputmode="text" autocomplete="off" maxlength="64"
        value="${form?.chatId ?? ""}">
      </div>
    </details>
    <div class="actions">
      <button type="submit" name="action" value="save">Save alert settings</button>
      ${
        view.alerts
          ? html`<button type="submit" name="action" value="clear"
        class="secondary">Stop all alerts</button>`
          : ""
      }
    </div>
  </form>
</section>`;
}
