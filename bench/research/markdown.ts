/** Number and table formatting shared by the generated docs/signal-quality.md. Deterministic. */

/** A number with fixed decimals, never "-0.00"; "–" for null or NaN. */
export function fixed(value: number, decimals = 2): string {
  const text = value.toFixed(decimals);
  return Number(text) === 0 ? (0).toFixed(decimals) : text;
}

/** A number with fixed decimals, "–" for null or NaN, "∞" for Infinity. */
export function orDash(value: number | null, decimals = 2): string {
  if (value === null || Number.isNaN(value)) return "–";
  return value === Infinity ? "∞" : fixed(value, decimals);
}

/** A profit factor: "–" without trades, "∞" without losses. */
export function formatPf(value: number | null): string {
  return orDash(value, 2);
}

/** A Markdown table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
