/**
 * The zod pieces every section of the configuration is written with, and its one error.
 * A section states each variable once with these; src/config.ts joins the sections.
 */
import { z } from "zod";
import { commaList } from "../market/symbols.ts";

/** A variable (or flag) with a bad value; the message is one line and never quotes a secret. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** An environment as src/config.ts hands it over (process.env, or a test's record). */
export type Env = Record<string, string | undefined>;

/** Records `message` as the issue of the value being parsed. */
export function fail(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: "custom", message });
  return z.NEVER;
}

/** A check that spans several variables of a section, with the line shown when it fails. */
export interface Rule<E> {
  readonly holds: (env: E) => boolean;
  readonly message: string;
}

/** The trimmed value, or undefined when it is unset or blank. */
export const trimmedOrUndefined = (raw: string | undefined): string | undefined => raw?.trim() || undefined;

/** The variable's trimmed value, or undefined when it is unset or blank. */
export const optionalText = z.string().optional().transform(trimmedOrUndefined);

/** A whole number in [min, max]; the default when unset or blank. */
export function wholeNumber(fallback: number, min: number, max: number) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === "") return fallback;
      if (!/^\d+$/.test(raw.trim())) return fail(ctx, `must be a whole number, got "${raw}"`);
      const value = Number(raw.trim());
      if (value < min || value > max) return fail(ctx, `must be between ${min} and ${max}, got ${value}`);
      return value;
    });
}

/** true/false (also 1/0, yes/no, on/off); undefined when unset, for defaults that depend on others. */
export const flag = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    const value = raw?.trim().toLowerCase();
    if (value === undefined || value === "") return undefined;
    if (["1", "true", "yes", "on"].includes(value)) return true;
    if (["0", "false", "no", "off"].includes(value)) return false;
    return fail(ctx, `must be true or false, got "${raw}"`);
  });

/** A host name or address; the default when unset. */
export const hostName = (fallback: string) =>
  optionalText.transform((raw, ctx) =>
    raw === undefined
      ? fallback
      : /^[A-Za-z0-9.:\-[\]]+$/.test(raw)
        ? raw
        : fail(ctx, `is not a host name or address: "${raw}"`),
  );

/** `raw` as a URL of one of `protocols` (e.g. "http:"), without its trailing slashes; null when it is not one. */
export function urlWithout(raw: string, protocols: readonly string[]): string | null {
  try {
    return protocols.includes(new URL(raw).protocol) ? raw.replace(/\/+$/, "") : null;
  } catch {
    return null;
  }
}

/**
 * A URL of one of `protocols` without its trailing slashes (undefined when unset or blank);
 * `message` says what a bad value is told.
 */
export function urlText(protocols: readonly string[], message: (raw: string) => string) {
  return optionalText.transform((raw, ctx) => {
    if (raw === undefined) return undefined;
    return urlWithout(raw, protocols) ?? fail(ctx, message(raw));
  });
}

/** An http(s) URL without its trailing slashes; undefined when unset. */
export const httpUrl = urlText(["http:", "https:"], (raw) => `must be an http(s) URL, got "${raw}"`);

/** A list of items separated by commas or white space: trimmed, empties and repeats dropped. */
export const textList = z
  .string()
  .optional()
  .transform((raw) => commaList(raw?.replace(/\s+/g, ","), Infinity));

/** The parsed values of a section's variables. */
export type Parsed<S extends z.ZodRawShape> = z.output<z.ZodObject<S>>;
