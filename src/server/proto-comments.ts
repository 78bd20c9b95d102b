/**
 * Leading comments of the .proto files, for the OpenAPI document's descriptions. The generated
 * descriptors in gen/ carry no source info, so the comments are read from proto/ when it is
 * there (a checkout, the Docker image); without it the document simply has no descriptions.
 * Keys: "signals.v1.Message", "signals.v1.Message.field", "signals.v1.Service.Method".
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const DECLARATION = /^(message|service|enum)\s+(\w+)\s*\{/;
const RPC = /^rpc\s+(\w+)\s*\(/;
const FIELD = /^(?:optional\s+|repeated\s+)?[\w.]+(?:<[^>]*>)?\s+(\w+)\s*=\s*\d+/;

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
        pending.push(line.replace(/^\/\/\s?/, ""));
        continue;
      }
      const name = (key: string) => [pkg, ...scope, key].filter(Boolean).join(".");
      const declaration = DECLARATION.exec(line);
      const rpc = RPC.exec(line);
      const field = FIELD.exec(line);
      if (declaration) {
        if (pending.length) comments.set(name(declaration[2]!), pending.join("\n"));
        scope.push(declaration[2]!);
      } else if (rpc) {
        if (pending.length) comments.set(name(rpc[1]!), pending.join("\n"));
      } else if (field && scope.length) {
        if (pending.length) comments.set(name(field[1]!), pending.join("\n"));
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
