/**
 * The public sign-up form. Pure rendering.
 */
import type { PageContext } from "./auth-pages.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { html, layout } from "./html.ts";
import { MIN_PASSWORD_LENGTH } from "./passwords.ts";

/** The sign-up form; `csrfToken` is the double-submit value also set as the `csrf` cookie. */
export function renderSignUpPage(ctx: PageContext, form: { csrfToken: string; email?: string; error?: string | null }): string {
  return layout(
    { title: "Create an account", stylesheet: ctx.stylesheet, signedIn: null },
    html`<h1>Create an account</h1>
<p>Sign up with your email and a password. Then subscribe on your account page to get an API key and your monthly Tokens.</p>
${form.error ? html`<div class="notice error" role="alert">${form.error}</div>` : ""}
<form class="stack" method="post" action="/signup">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <div>
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${form.email ?? ""}"${form.error ? "" : html` autofocus`}>
  </div>
  <div>
    <label for="password">Password <span class="hint">At least ${MIN_PASSWORD_LENGTH} characters.</span></label>
    <input id="password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024">
  </div>
  <div>
    <label for="confirm">Repeat the password</label>
    <input id="confirm" name="confirm" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD_LENGTH}" maxlength="1024">
  </div>
  <div class="actions"><button type="submit">Create account</button></div>
</form>
<p class="muted">Have an account? <a href="/signin">Sign in</a>.</p>`,
  );
}
