/**
 * The password reset mail: its text (plain and a simple HTML part, both with the link and when
 * it stops working) and its sending through SMTP with nodemailer (SMTP_URL, MAIL_FROM). The
 * link holds the secret token, so neither it nor the message is ever logged. nodemailer is loaded
 * with the first mail, not at start (only what requests need stays resident).
 */
import type { Transporter } from "nodemailer";
import type { Config } from "../config.ts";
import { formatMyt } from "./format.ts";
import { html } from "./html.ts";

export type MailConfig = NonNullable<Config["mail"]>;

export interface ResetMail {
  readonly to: string;
  readonly link: string;
  readonly expiresAt: Date;
}

/** Subject, plain text and HTML of a reset mail. */
export function composeResetMail(mail: ResetMail): { subject: string; text: string; html: string } {
  const until = formatMyt(mail.expiresAt.getTime());
  const text = [
    "Someone (we hope you) asked to reset the password of your signals account.",
    "",
    "Choose a new password here:",
    mail.link,
    "",
    `The link works once and for 1 hour, until ${until}. Setting a new password signs you out everywhere.`,
    "",
    "Did not ask for this? Ignore this mail: your password stays as it is.",
  ].join("\n");
  const body = html`<p>Someone (we hope you) asked to reset the password of your signals account.</p>
<p><a href="${mail.link}">Choose a new password</a></p>
<p>The link works once and for 1 hour, until ${until}. Setting a new password signs you out everywhere.</p>
<p>Did not ask for this? Ignore this mail: your password stays as it is.</p>
<p style="color:#555">If the button does not open, copy this address into your browser:<br>${mail.link}</p>`;
  return { subject: "Reset your password", text, html: body.value };
}

/** A mail's three parts. */
export interface ComposedMail {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** The link that confirms a sign-up's address. */
export function composeVerifyMail(mail: ResetMail): ComposedMail {
  const until = formatMyt(mail.expiresAt.getTime());
  const text = [
    "Someone (we hope you) created a signals account with this address.",
    "",
    "Confirm the address here:",
    mail.link,
    "",
    `The link works once, until ${until}. Until then the account cannot subscribe, buy Tokens or make an API key.`,
    "",
    "Did not sign up? Ignore this mail: nothing is charged and the account stays unconfirmed.",
  ].join("\n");
  const body = html`<p>Someone (we hope you) created a signals account with this address.</p>
<p><a href="${mail.link}">Confirm the address</a></p>
<p>The link works once, until ${until}. Until then the account cannot subscribe, buy Tokens or make an API key.</p>
<p>Did not sign up? Ignore this mail: nothing is charged and the account stays unconfirmed.</p>
<p style="color:#555">If the button does not open, copy this address into your browser:<br>${mail.link}</p>`;
  return { subject: "Confirm your email address", text, html: body.value };
}

/**
 * The answer to a sign-up with an address that has an account already: the page says the same
 * either way, and only the mailbox's owner learns that the account exists (OWASP, GitHub).
 */
export function composeAlreadyMemberMail(links: { signIn: string; forgot: string | null }): ComposedMail {
  const text = [
    "Someone (we hope you) tried to create a signals account with this address, but it has one already.",
    "",
    `Sign in here: ${links.signIn}`,
    ...(links.forgot ? [`Forgot the password? Ask for a new one: ${links.forgot}`] : []),
    "",
    "Did not try to sign up? Ignore this mail: nothing changed.",
  ].join("\n");
  const body = html`<p>Someone (we hope you) tried to create a signals account with this address, but it has one \
already.</p>
<p><a href="${links.signIn}">Sign in</a>${
    links.forgot
      ? html` or <a href="${links.forgot}">ask for a new \
password</a>`
      : ""
  }.</p>
<p>Did not try to sign up? Ignore this mail: nothing changed.</p>`;
  return { subject: "You already have an account", text, html: body.value };
}

/** Sends reset mails over one SMTP transport (not pooled: a connection per message, none left open). */
export function createResetMailer(config: MailConfig) {
  let transport: Promise<Transporter> | null = null;
  // A failed load is not kept: the next mail tries again instead of failing until a restart.
  const transportOnce = () =>
    (transport ??= import("nodemailer")
      .then(({ createTransport }) => createTransport(config.smtpUrl))
      .catch((err: unknown) => {
        transport = null;
        throw err;
      }));
  return {
    async send(mail: ResetMail): Promise<void> {
      await (await transportOnce()).sendMail({ from: config.from, to: mail.to, ...composeResetMail(mail) });
    },
    /** Any composed mail (the sign-up's confirmation and "already a member" mails). */
    async sendComposed(to: string, mail: ComposedMail): Promise<void> {
      await (await transportOnce()).sendMail({ from: config.from, to, ...mail });
    },
  };
}
export type ResetMailer = ReturnType<typeof createResetMailer>;
