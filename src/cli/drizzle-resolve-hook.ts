/**
 * A module resolve hook for start-up time. Node 24 finds the format of every `.js`
 * file it loads from its package.json, and for drizzle-orm that means parsing its 175 KB
 * "exports" map once per file (a hundred files for one query): about 0.4 s of a CLI command on
 * Postgres. drizzle-orm is `"type": "module"` and its files import each other by relative
 * `.js` paths, so those resolve here to an ES module without that lookup; everything else goes
 * to Node's own resolver.
 */
import { registerHooks } from "node:module";

/** Installs the hook for the rest of this process. */
export function resolveDrizzleQuickly(): void {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (
        specifier.startsWith(".") &&
        specifier.endsWith(".js") &&
        context.parentURL?.includes("/node_modules/drizzle-orm/")
      ) {
        return { url: new URL(specifier, context.parentURL).href, format: "module", shortCircuit: true };
      }
      return nextResolve(specifier, context);
    },
  });
}
