/**
 * HTML building with escaping by default: `html\`...\`` escapes every interpolated value
 * unless it is already SafeHtml (another html fragment). There is no way to interpolate an
 * unescaped string except jsonScript for data blocks, so user data cannot become markup.
 */
import { CSRF_FIELD } from "./csrf.ts";

/** Markup that is already safe to include as is. */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Fragment = SafeHtml | string | number | null | undefined | false | readonly Fragment[];

function render(value: Fragment): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** Tagged template: literal parts are markup, interpolations are escaped (arrays are joined). */
export function html(strings: TemplateStringsArray, ...values: Fragment[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/**
 * A JSON data block (`<script type="application/json">`), which browsers never execute, so the
 * CSP needs no exception. `<` is escaped so the text can never close the element.
 */
export function jsonScript(id: string, data: unknown): SafeHtml {
  const json = JSON.stringify(data)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
  return new SafeHtml(`<script type="application/json" id="${escapeHtml(id)}">${json}</script>`);
}

/** The site's icon; unversioned, so it is revalidated (ETag) rather than threaded through every page's context. */
const FAVICON_URL = "/assets/favicon.svg";

/** The navigation's entries (signed in and signed out). */
export type NavKey =
  | "account"
  | "watch"
  | "charts"
  | "track-record"
  | "getting-started"
  | "pricing"
  | "docs"
  | "signin"
  | "home";

export interface LayoutOptions {
  readonly title: string;
  /** Signed-in pages show the navigation and a sign-out form carrying this CSRF token. */
  readonly signedIn?: { email: string; csrfToken: string } | null;
  /** URLs of the stylesheet and of extra scripts (from the asset table). */
  readonly stylesheet: string;
  readonly scripts?: readonly string[];
  /** Which navigation entry is current (for aria-current). */
  readonly current?: NavKey;
  /** A local path to load at once (meta refresh; no script needed). */
  readonly refreshTo?: string;
}

/** Entries of the navigation: signed in, then signed out (the sign-out form follows the first list). */
const MEMBER_NAV: ReadonlyArray<{ key: NavKey; href: string; text: string }> = [
  { key: "account", href: "/account", text: "Account" },
  { key: "watch", href: "/watch", text: "Watchlist" },
  { key: "charts", href: "/charts", text: "Charts" },
  { key: "track-record", href: "/track-record", text: "Track record" },
  { key: "getting-started", href: "/getting-started", text: "Getting started" },
];
const VISITOR_NAV: ReadonlyArray<{ key: NavKey; href: string; text: string }> = [
  { key: "pricing", href: "/pricing", text: "Pricing" },
  { key: "track-record", href: "/track-record", text: "Track record" },
  { key: "getting-started", href: "/getting-started", text: "Getting started" },
  { key: "docs", href: "/docs", text: "API docs" },
  { key: "signin", href: "/signin", text: "Sign in" },
];

/** The logo mark: two candles, one up, one down (inline, so it costs no request). */
export const LOGO_MARK = new SafeHtml(
  `<svg class="logo" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false"><rect ` +
    `width="32" height="32" rx="7" class="logo-bg"/><path d="M10 6v20M22 6v20" class="logo-wick"/><rect ` +
    `x="6.5" y="11" width="7" height="10" rx="1" class="logo-up"/><rect x="18.5" ` +
    `y="9" width="7" height="9" rx="1" class="logo-down"/></svg>`,
);

const navItem = (entry: { key: NavKey; href: string; text: string }, current: NavKey | undefined) =>
  html`<li><a href="${entry.href}"${entry.key === current ? html` aria-current="page"` : ""}>${entry.text}</a></li>`;

/** The page around `content`: skip link, header, navigation, main, footer. */
export function layout(options: LayoutOptions, content: SafeHtml): string {
  const nav = options.signedIn
    ? html`<nav aria-label="Main">
        <ul class="nav">
          ${MEMBER_NAV.map((entry) => navItem(entry, options.current))}
          <li>
            <form method="post" action="/signout" class="inline">
              <input type="hidden" name="${CSRF_FIELD}" value="${options.signedIn.csrfToken}">
              <button type="submit" class="link-button">Sign out</button>
            </form>
          </li>
        </ul>
        <p class="who">Signed in as <span>${options.signedIn.email}</span></p>
      </nav>`
    : html`<nav aria-label="Main">
        <ul class="nav">
          ${VISITOR_NAV.map((entry) => navItem(entry, options.current))}
          <li><a class="button small" href="/signup">Sign up</a></li>
        </ul>
      </nav>`;
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
${
  options.refreshTo
    ? html`<meta http-equiv="refresh" content="0;url=${options.refreshTo}">
`
    : ""
}<title>${options.title} · Signals</title>
<link rel="icon" href="${FAVICON_URL}" type="image/svg+xml">
<link rel="stylesheet" href="${options.stylesheet}">
${(options.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`)}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site">
  <p class="brand"><a href="/">${LOGO_MARK}<span>Signals</span></a></p>
  ${nav}
</header>
<main id="main" tabindex="-1">
${content}
</main>
<footer class="site">
  <p class="footer-links"><a href="/pricing">Pricing</a> · <a href="/getting-started">Getting started</a> · \
<a href="/docs">API docs</a> · <a href="/track-record">Track record</a> · <a href="/status">Status</a></p>
  <p>Market-structure signals are educational information, not investment advice. Past results do not predict future \
ones.</p>
</footer>
</body>
</html>
`;
  return page.value;
}
