/**
 * The public sign-up form. Pure rendering.
 */

import { MIN_PASSWORD_LENGTH } from "../accounts/sign-in/passwords.ts";
import type { PageContext } from "./auth-pages.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { html, layout } from "./html.ts";

/** The sign-up form; `csrfToken` is the double-submit value also set as the `csrf` cookie. */
export function renderSignUpPage(
  ctx: PageContext,
  form: { csrfToken: string; email?: string; error?: string | null },
): string {
  return layout(
    { title: "Create an account", stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>Create an account</h1>
<p>Sign up with your email and a password. Then subscribe on your account page to get an API key and your monthly \
Tokens.</p>
${form.error ? html`<div class="notice error" role="alert">${form.error}</div>` : ""}
<form class="stack" method="post" action="/signup">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <div>
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="320"
    value="${form.email ?? ""}"${form.error ? "" : html` autofocus`}>
  </div>
  <div>
    <label for="password">Password <span class="hint">At least ${MIN_PASSWORD_LENGTH} characters.</span></label>
    <input id="password" name="password" type="password" autocomplete="new-password" required
    minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024">
  </div>
  <div>
    <label for="confirm">Repeat the password</label>
    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required
    minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024">
  </div>
  <div class="actions"><button type="submit">Create account</button></div>
</form>
<p class="muted">Have an account? <a href="/signin">Sign in</a>.</p>`,
  );
}

/**
 * The answer to every accepted sign-up, the same whether or not the address had an account.
 * With mail, the next step is in the mailbox; without, signing in.
 */
export function renderSignUpSentPage(ctx: PageContext, sent: { email: string; byMail: boolean }): string {
  return layout(
    { title: "Check your mail", stylesheet: ctx.stylesheet, signedIn: null },
    sent.byMail
      ? html`<h1>Check your mail</h1>
<p>We sent a message to <strong>${sent.email}</strong>. Open the link in it to confirm the address, then sign in.</p>
<p class="muted">Until the address is confirmed the account cannot subscribe, buy Tokens or make an API key. No mail \
after a few minutes? Look in the spam folder, or sign in and ask for the link again.</p>
<p><a href="/signin">Sign in</a></p>`
      : html`<h1>Sign in to continue</h1>
<p>If <strong>${sent.email}</strong> had no account, it has one now with the password you chose. Sign in with it.</p>
<p><a href="/signin">Sign in</a></p>`,
  );
}

/** The page a confirmation link opens: one button, so a mail scanner's preview does not use the link. */
export function renderVerifyEmailPage(
  ctx: PageContext,
  form: { csrfToken: string; token: string; email: string },
): string {
  return layout(
    { title: "Confirm your email", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Confirm your email</h1>
<p>Confirm <strong>${form.email}</strong> as the address of your signals account.</p>
<form class="stack" method="post" action="/verify-email">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <input type="hidden" name="token" value="${form.token}">
  <div class="actions"><button type="submit">Confirm</button></div>
</form>`,
  );
}
