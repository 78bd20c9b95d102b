/**
 * Reads a secret (a member's password) for the CLI from standard input, never from the command
 * line (which other users can see in the process list and which lands in shell history).
 * On a terminal it prompts twice without echo; from a pipe or file it takes the first line.
 */
import { stderr, stdin } from "node:process";

/** Most bytes read from a pipe: far above any password, small enough to refuse a stray file. */
const MAX_PIPED_BYTES = 64 * 1024;

async function readPiped(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_PIPED_BYTES) throw new Error("standard input is too long for a password");
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  const newline = text.search(/\r?\n/);
  return newline === -1 ? text : text.slice(0, newline);
}

function promptHidden(prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    stderr.write(prompt);
    let typed = "";
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    stdin.resume();
    const done = (result: Error | string) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write("\n");
      if (typeof result === "string") resolve(result);
      else reject(result);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return done(typed);
        if (ch === "\u0003" || ch === "\u0004") return done(new Error("cancelled"));
        if (ch === "\u007f" || ch === "\b") typed = [...typed].slice(0, -1).join("");
        else if (ch >= " ") typed += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/** The password from standard input; throws with a one-line reason when there is none. */
export async function readSecretFromStdin(what: string): Promise<string> {
  if (stdin.isTTY) {
    const first = await promptHidden(`New ${what} (not shown): `);
    const second = await promptHidden(`Repeat the ${what}: `);
    if (first !== second) throw new Error(`the two ${what}s differ; nothing was changed`);
    return first;
  }
  const secret = await readPiped();
  if (secret === "") throw new Error(`no ${what} on standard input (pipe it in, e.g. from a password manager)`);
  return secret;
}
