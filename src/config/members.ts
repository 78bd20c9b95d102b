/** Members' web sessions, their chart page views and the mail that reaches them. */
import { optionalText, type Parsed, type Rule, wholeNumber } from "./parse.ts";

/** An smtp:// or smtps:// URL (credentials inside); the message never quotes the value. */
const smtpUrl = optionalText.refine((raw) => {
  if (raw === undefined) return true;
  try {
    const url = new URL(raw);
    return (url.protocol === "smtp:" || url.protocol === "smtps:") && url.hostname !== "";
  } catch {
    return false;
  }
}, "must be an smtp:// or smtps:// URL such as smtp://user:password@mail.example:587");

/** A sender such as `Signals <no-reply@signals.example>`: one line with an address in it. */
const mailFrom = optionalText.refine(
  (v) => v === undefined || (/^[^\r\n]{3,320}$/.test(v) && /[^\s@<>]+@[^\s@<>]+/.test(v)),
  "must be a sender address such as Signals <no-reply@signals.example>",
);

export const membersEnv = {
  SESSION_TTL_HOURS: wholeNumber(168, 1, 24 * 365),
  PAGE_VIEWS_PER_MINUTE: wholeNumber(20, 1, 1_000_000),
  PAGE_VIEWS_PER_DAY: wholeNumber(1000, 1, 100_000_000),
  SMTP_URL: smtpUrl,
  MAIL_FROM: mailFrom,
  PASSWORD_SCRYPT_LOG_N: wholeNumber(17, 10, 20),
};

type MembersEnv = Parsed<typeof membersEnv>;

export const membersRules: Rule<MembersEnv>[] = [
  {
    holds: (env) => env.SMTP_URL === undefined || env.MAIL_FROM !== undefined,
    message: "MAIL_FROM is required with SMTP_URL: password reset mails need a sender",
  },
];

/** The members' settings. */
export function membersConfig(env: MembersEnv) {
  return {
    /** How long a web sign-in lasts (ms). */
    sessionTtlMs: env.SESSION_TTL_HOURS * 3_600_000,
    /**
     * Views of pages showing the current signal (a paid plan's chart pages): per web session
     * per minute, and per account per MYT day over all its sessions (accounts/page-views.ts).
     */
    pageViews: Object.freeze({
      perSessionPerMinute: env.PAGE_VIEWS_PER_MINUTE,
      perAccountPerDay: env.PAGE_VIEWS_PER_DAY,
    }),
    /**
     * Outgoing mail (password reset links, docs/accounts.md); null (SMTP_URL unset): no
     * "Forgot password?" link, the reset pages answer 404, the operator's CLI links remain.
     */
    mail: env.SMTP_URL === undefined ? null : Object.freeze({ smtpUrl: env.SMTP_URL, from: env.MAIL_FROM! }),
    /**
     * The scrypt cost new member passwords are hashed at: N = 2^PASSWORD_SCRYPT_LOG_N with
     * OWASP's r = 8, p = 1 (accounts/sign-in/passwords.ts DEFAULT_SCRYPT). A stored hash is
     * verified at the cost written in it, whatever this says. Below 17 only for tests.
     */
    passwordHashCost: Object.freeze({ logN: env.PASSWORD_SCRYPT_LOG_N, r: 8, p: 1 }),
  };
}
