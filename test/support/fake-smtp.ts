/**
 * A real SMTP server on loopback (npm `smtp-server`) that keeps every message it receives,
 * parsed with `mailparser`. It asks for the user and password of its URL (plain AUTH is allowed
 * without TLS on loopback), so the service's SMTP_URL credentials are exercised too.
 */

import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { waitFor } from "./reliability.ts";
import { EVENT_WAIT_MS } from "./waits.ts";

export interface FakeSmtp {
  /** smtp://user:password@127.0.0.1:port, for SMTP_URL. */
  readonly url: string;
  /** Every message accepted so far, in arrival order. */
  readonly messages: ParsedMail[];
  /** The first message to `to` after the first `skip` ones to that address (waits up to 10 s). */
  mailTo(to: string, skip?: number): Promise<ParsedMail>;
  /** Messages to `to` received so far. */
  countTo(to: string): number;
  close(): Promise<void>;
}

const USER = "mailer";
const PASSWORD = "smtp-test-password";

const recipients = (mail: ParsedMail): string[] =>
  [mail.to ?? []].flat().flatMap((address) => address.value.map((v) => (v.address ?? "").toLowerCase()));

export async function startFakeSmtp(): Promise<FakeSmtp> {
  const messages: ParsedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === USER && auth.password === PASSWORD) callback(null, { user: USER });
      else callback(new Error("Invalid username or password"));
    },
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          messages.push(mail);
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as { port: number };
  const countTo = (to: string) => messages.filter((m) => recipients(m).includes(to.toLowerCase())).length;
  return {
    url: `smtp://${USER}:${PASSWORD}@127.0.0.1:${port}`,
    messages,
    countTo,
    async mailTo(to, skip = 0) {
      await waitFor(() => countTo(to) > skip, EVENT_WAIT_MS, `mail number ${skip + 1} to ${to}`);
      return messages.filter((m) => recipients(m).includes(to.toLowerCase()))[skip]!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
