/**
 * Patches postgres.js 3.4.9 in node_modules at install (package.json "postinstall"), for the one
 * fault that cannot be repaired from outside the driver (src/db/postgres-js-repairs.ts has the
 * others): when a connection closes in the middle of a transaction (pg_terminate_backend, a
 * reset, a failover), the transaction's ROLLBACK is written to the connection after the driver
 * has set its socket to null, and `nextWrite` throws a TypeError from a setImmediate: an
 * uncaught exception that ends the whole server process and every call in flight on it
 * (porsager/postgres #1154, #1208; the guard below is the one proposed in #1209). Patched, the
 * ROLLBACK fails with CONNECTION_CLOSED like every other query of a closed connection.
 *
 * The function lives inside the connection's closure, so no wrapper can reach it. The script is
 * idempotent and refuses to install over a driver whose code no longer matches: delete it when
 * upstream releases the fix (test/integration/postgres-js-patch.test.ts then shows whether the
 * new release still needs it).
 */
import { readFileSync, writeFileSync } from "node:fs";

const MARK = "signals-service: postgres.js #1209";
const BROKEN = "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n";
const FIXED =
  "  function nextWrite(fn) {\n" +
  `    if (socket === null) { // ${MARK}\n` +
  "      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n" +
  "      chunk = nextWriteTimer = null\n" +
  "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
  "      return false\n" +
  "    }\n" +
  "    const x = socket.write(chunk, fn)\n";

/** The driver's two builds: the ES module (what the server imports) and the CommonJS one. */
const FILES = ["src/connection.js", "cjs/src/connection.js"];

export function patchPostgresJs(packageDir: URL): string[] {
  const patched: string[] = [];
  for (const file of FILES) {
    const url = new URL(file, packageDir);
    const source = readFileSync(url, "utf8");
    if (source.includes(MARK)) continue;
    if (!source.includes(BROKEN))
      throw new Error(`postgres.js changed: ${url.pathname} has no nextWrite to patch (see ${import.meta.url})`);
    writeFileSync(url, source.replace(BROKEN, FIXED));
    patched.push(file);
  }
  return patched;
}

if (import.meta.main) {
  const patched = patchPostgresJs(new URL("../../node_modules/postgres/", import.meta.url));
  console.log(`postgres.js: ${patched.length > 0 ? `patched ${patched.join(", ")}` : "already patched"}`);
}
