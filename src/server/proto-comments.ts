/**
 * Leading comments of the .proto files, for the OpenAPI document's descriptions. The generated
 * descriptors in gen/ carry no source info, so the comments are read from proto/ when it is
 * there (a checkout, the Docker image); without it the document simply has no descriptions.
 * Keys: "signals.v1.Message", "signals.v1.Message.field", "signals.v1.Service.Method".
 * The error tables the service comments carry as aligned plain-text columns
 * ("  401 api_key_required      UNAUTHENTICATED     no key sent") become Markdown tables, so
 * the reference page shows a table rather than one run-on paragraph.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const DECLARATION = /^(message|service|enum)\s+(\w+)\s*\{/;
const RPC = /^rpc\s+(\w+)\s*\(/;
const FIELD = /^(?:optional\s+|repeated\s+)?[\w.]+(?:<[^>]*>)?\s+(\w+)\s*=\s*\d+/;
/** A row of an error table: status, code, gRPC code, when. */
const ERROR_ROW = /^\s{2,}(\d{3})\s+([a-z_]+)\s+([A-Z_]+)\s+(\S.*)$/;
/** A row's "when" running on into the next line, indented under it. */
const CONTINUATION = /^\s{10,}(\S.*)$/;

/** The comment's lines with each error table as a Markdown table (blank lines around it). */
export function renderErrorTables(lines: readonly string[]): string[] {
  const out: string[] = [];
  let inTable = false;
  for (const line of lines) {
    const row = ERROR_ROW.exec(line);
    const more = inTable ? CONTINUATION.exec(line) : null;
    if (row) {
      if (!inTable) out.push("", "| HTTP | code | gRPC / Connect | when |", "| --- | --- | --- | --- |");
      inTable = true;
      out.push(`| ${row[1]} | \`${row[2]}\` | \`${row[3]}\` | ${row[4]!.replace(/\|/g, "\\|")} |`);
    } else if (more) {
      out[out.length - 1] = `${out.at(-1)!.slice(0, -2)} ${more[1]!.replace(/\|/g, "\\|")} |`;
    } else {
      if (inTable) out.push("");
      inTable = false;
      out.push(line);
    }
  }
  return out;
}

/** Reads every .proto file under `dir` (recursively); returns an empty map when it is absent. */
export function readProtoComments(dir: string): Map<string, string> {
  const comments = new Map<string, string>();
  let files: string[];
  try {
    files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".proto"));
  } catch {
    return comments;
  }
  for (const file of files) {
    const text = readFileSync(path.join(dir, file), "utf8");
    const pkg = /^package\s+([\w.]+);/m.exec(text)?.[1] ?? "";
    const scope: string[] = [];
    let pending: string[] = [];
    for (const raw of text.split("\n")) {
      const line = raw.trim();
      if (line.startsWith("//")) {
        pending.push(raw.trim().replace(/^\/\/ ?/, ""));
        continue;
      }
      const name = (key: string) => [pkg, ...scope, key].filter(Boolean).join(".");
      const text = () => renderErrorTables(pending).join("\n");
      const declaration = DECLARATION.exec(line);
      const rpc = RPC.exec(line);
      const field = FIELD.exec(line);
      if (declaration) {
        if (pending.length) comments.set(name(declaration[2]!), text());
        scope.push(declaration[2]!);
      } else if (rpc) {
        if (pending.length) comments.set(name(rpc[1]!), text());
      } else if (field && scope.length) {
        if (pending.length) comments.set(name(field[1]!), text());
      }
      // A closing brace ends the innermost declaration (one-line options blocks open and close).
      const opens = (line.match(/\{/g) ?? []).length - (declaration ? 1 : 0);
      const closes = (line.match(/\}/g) ?? []).length;
      for (let i = 0; i < closes - opens && scope.length; i++) scope.pop();
      pending = [];
    }
  }
  return comments;
}
