/**
 * Pages around signing in: the sign-in form, the password setup form, and the plain message
 * pages (refused form, too many attempts, errors). Pure rendering.
 */

import { MIN_PASSWORD_LENGTH } from "../accounts/sign-in/passwords.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { html, layout, type SafeHtml } from "./html.ts";

/** What every page needs from the request. */
export interface PageContext {
  readonly stylesheet: string;
  readonly signedIn: { email: string; csrfToken: string } | null;
}

function notice(
  kind: "ok" | "error" | "warn",
  text: string | null | undefined,
  role: "status" | "alert" = kind === "error" ? "alert" : "status",
): SafeHtml | "" {
  return text ? html`<div class="notice ${kind}" role="${role}">${text}</div>` : "";
}

/** The sign-in form. `csrfToken` is the double-submit value also set as the `csrf` cookie. */
export function renderSignInPage(
  ctx: PageContext,
  form: {
    csrfToken: string;
    email?: string;
    next?: string | null;
    error?: string | null;
    info?: string | null;
    resetByMail: boolean;
  },
): string {
  return layout(
    { title: "Sign in", stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>Sign in</h1>
${notice("ok", form.info)}
${notice("error", form.error)}
<form class="stack" method="post" action="/signin">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  ${form.next ? html`<input type="hidden" name="next" value="${form.next}">` : ""}
  <div>
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="320"
    value="${form.email ?? ""}"${form.error ? "" : html` autofocus`}>
  </div>
  <div>
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required
    maxlength="1024"${form.error ? html` autofocus` : ""}>
  </div>
  <div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="muted">New here? <a href="/signup">Create an account</a>. ${
      form.resetByMail
        ? html`<a href="/forgot-password">Forgot password?</a>`
        : "Forgot your password? Your operator sends you a one-time setup link."
    }</p>`,
  );
}

/** The new password and its repetition (the setup, reset and change forms share them). */
function newPasswordFields(autofocus: boolean): SafeHtml {
  return html`<div>
    <label for="password">New password <span class="hint">At least ${MIN_PASSWORD_LENGTH} characters.</span></label>
    <input id="password" name="password" type="password" autocomplete="new-password" required
    minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024"${autofocus ? html` autofocus` : ""}>
  </div>
  <div>
    <label for="confirm">Repeat the new password</label>
    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required
    minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024">
  </div>`;
}

/**
 * The form behind a one-time password link (the token travels in a cookie, not in this page).
 * A reset link's member had a password; a setup link's may not have had one yet.
 */
export function renderPasswordLinkPage(
  ctx: PageContext,
  form: { csrfToken: string; email: string; kind: "setup" | "reset"; action: string; error?: string | null },
): string {
  const title = form.kind === "reset" ? "Choose a new password" : "Choose a password";
  return layout(
    { title, stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>${title}</h1>
<p>For the account <strong>${form.email}</strong>. This link works once; setting the password signs this account out \
on every device.</p>
${notice("error", form.error)}
<form class="stack" method="post" action="${form.action}">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <input type="text" name="username" autocomplete="username" value="${form.email}" hidden>
  ${newPasswordFields(true)}
  <div class="actions"><button type="submit">Set password</button></div>
</form>`,
  );
}

/** "Forgot password?": the email form that asks for a reset link. */
export function renderForgotPasswordPage(
  ctx: PageContext,
  form: { csrfToken: string; email?: string; error?: string | null },
): string {
  return layout(
    { title: "Reset your password", stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>Reset your password</h1>
<p>Enter the email of your account. We send a link there that lets you choose a new password; it works once, for 1 \
hour.</p>
${notice("error", form.error)}
<form class="stack" method="post" action="/forgot-password">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <div>
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="320"
    value="${form.email ?? ""}" autofocus>
  </div>
  <div class="actions"><button type="submit">Send the link</button></div>
</form>
<p class="muted"><a href="/signin">Back to sign in</a></p>`,
  );
}

/**
 * The answer to a reset request: the same words whether or not an account uses the address,
 * and whether or not its hourly budget allowed another mail.
 */
export function renderResetRequestedPage(ctx: PageContext, email: string): string {
  return layout(
    { title: "Check your email", stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>Check your email</h1>
<div class="notice ok" role="status" id="reset-requested">If an account uses <strong>${email}</strong>, a link to \
choose a new password is on its way there. It works once, for 1 hour.</div>
<p class="muted">No mail after a few minutes? Check the spam folder and the address you typed, then ask again. A few \
links per hour are sent at most.</p>
<p><a href="/signin">Back to sign in</a></p>`,
  );
}

/** A signed-in member's password change (the current password first). */
export function renderChangePasswordPage(
  ctx: PageContext & { signedIn: { email: string; csrfToken: string } },
  form: { error?: string | null; info?: string | null },
): string {
  return layout(
    { title: "Change password", stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>Change password</h1>
${notice("ok", form.info)}
${notice("error", form.error)}
<p>Changing it signs you out on every other device; this browser stays signed in.</p>
<form class="stack" method="post" action="/account/password">
  <input type="hidden" name="${CSRF_FIELD}" value="${ctx.signedIn.csrfToken}">
  <input type="text" name="username" autocomplete="username" value="${ctx.signedIn.email}" hidden>
  <div>
    <label for="current">Current password</label>
    <input id="current" name="current" type="password" autocomplete="current-password" required maxlength="1024"
    autofocus>
  </div>
  ${newPasswordFields(false)}
  <div class="actions"><button type="submit">Change password</button></div>
</form>
<p><a href="/account">Back to your account</a></p>`,
  );
}

/** The account page's card for the password and the sessions ("Sign out everywhere"). */
export function renderPasswordAndSessionsCard(csrfToken: string): SafeHtml {
  return html`<section class="card" aria-labelledby="signin-h">
  <h2 id="signin-h">Password and sessions</h2>
  <p><a href="/account/password">Change password…</a></p>
  <form method="post" action="/account/sessions/end">
    <input type="hidden" name="${CSRF_FIELD}" value="${csrfToken}">
    <div class="actions"><button type="submit" class="secondary">Sign out everywhere</button></div>
  </form>
  <p class="muted">Ends every session of this account, this browser included.</p>
</section>`;
}

/** A plain page with a heading, a message and a way on. */
export function renderMessagePage(
  ctx: PageContext,
  title: string,
  message: string,
  link: { href: string; text: string } = { href: "/", text: "Go to the start page" },
): string {
  return layout(
    { title, stylesheet: ctx.stylesheet, signedIn: ctx.signedIn },
    html`<h1>${title}</h1>
<p>${message}</p>
<p><a href="${link.href}">${link.text}</a></p>`,
  );
}

/**
 * Continues a link followed from another site. SameSite=Strict cookies are not sent on such a
 * navigation, so the member would look signed out; this page reloads the same address from our
 * own origin (a meta refresh, no script), and that request carries the session cookie.
 */
export function renderContinuePage(ctx: PageContext, path: string): string {
  return layout(
    { title: "Opening", stylesheet: ctx.stylesheet, signedIn: null, refreshTo: path },
    html`<h1>Opening…</h1>
<p><a href="${path}">Continue to ${path}</a></p>`,
  );
}
