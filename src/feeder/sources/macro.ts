/**
 * Macro series from FRED (MACRO_SERIES, FRED_API_KEY): each refresh (daily by default)
 * re-reads the observations of the last MACRO_HISTORY_DAYS of every series and pushes them
 * all; unchanged points are duplicates, and a value FRED has revised replaces the stored one
 * (the store upserts macro points by series and date). Stored under the FRED series id, with
 * the series' short unit, at 00:00 UTC of the observation date; "." (no value) is skipped.
 * One series failing does not stop the others.
 */
import type { MacroConfig } from "../../config/sources.ts";
import { backoffMs } from "../../retry.ts";
import { expectOk, HttpStatusError, httpGet, readJson } from "./http-get.ts";
import { streamOf, summaryOf } from "./ingest-client.ts";
import type { PeriodicSource, SourceDeps } from "./source.ts";

export const FRED_SOURCE = "FRED, Federal Reserve Bank of St. Louis";
const FIRST_RETRY_MS = 15 * 60_000;
const DAY_MS = 86_400_000;

export interface MacroPushRow {
  series: string;
  time: bigint;
  value: number;
  unit: string;
  source: string;
}

/** FRED's observations answer (documented fields we read). */
interface Observations {
  observations?: Array<{ date?: string; value?: string }>;
}

/** Points of one series from FRED's observations answer: dates as 00:00 UTC, "." skipped. Pure. */
export function macroRows(series: string, unit: string, body: Observations): MacroPushRow[] {
  const rows: MacroPushRow[] = [];
  for (const o of body.observations ?? []) {
    if (typeof o.date !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(o.date)) continue;
    if (typeof o.value !== "string" || o.value.trim() === "." || o.value.trim() === "") continue;
    const value = Number(o.value);
    if (!Number.isFinite(value)) continue;
    rows.push({ series, time: BigInt(Date.parse(`${o.date}T00:00:00Z`)), value, unit, source: FRED_SOURCE });
  }
  return rows;
}

/** FRED's error body: {"error_code":400,"error_message":"…"}. */
function describeFredError(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error_message?: string };
    return parsed.error_message ?? body.slice(0, 200);
  } catch {
    return body.slice(0, 200);
  }
}

export type MacroSourceDeps = SourceDeps<MacroConfig>;

/** The macro source. Needs FRED_API_KEY (checked by startContextSources). */
export function createMacroSource(deps: MacroSourceDeps): PeriodicSource {
  const { config, clock, logger, report } = deps;
  let nextDueMs = 0;
  let failures = 0;
  const units = new Map<string, string>();

  async function getJson<T>(path: string, params: Record<string, string>, signal: AbortSignal): Promise<T> {
    // The key travels in the query (FRED has no header for it); errors never repeat the URL.
    const query = new URLSearchParams({ ...params, api_key: config.apiKey ?? "", file_type: "json" });
    const res = await expectOk(
      await httpGet(`${config.apiBase}${path}?${query}`, {
        headers: { accept: "application/json" },
        timeoutMs: deps.timeoutMs,
        signal,
      }),
      clock(),
      describeFredError,
    );
    return readJson<T>(res);
  }

  async function seriesRows(series: string, signal: AbortSignal): Promise<MacroPushRow[]> {
    let unit = units.get(series);
    if (unit === undefined) {
      const info = await getJson<{ seriess?: Array<{ units_short?: string }> }>(
        "/series",
        { series_id: series },
        signal,
      );
      unit = (info.seriess?.[0]?.units_short ?? "").trim().slice(0, 32) || "value";
      units.set(series, unit);
    }
    const start = new Date(clock() - config.historyDays * DAY_MS).toISOString().slice(0, 10);
    return macroRows(
      series,
      unit,
      await getJson<Observations>("/series/observations", { series_id: series, observation_start: start }, signal),
    );
  }

  return {
    name: "macro",
    async poll(signal) {
      const now = clock();
      if (now < nextDueMs) return;
      const settled = await Promise.allSettled(config.series.map((s) => seriesRows(s, signal)));
      if (signal.aborted) return;
      const rows: MacroPushRow[] = [];
      const errors: string[] = [];
      let retryAfter = 0;
      settled.forEach((r, i) => {
        if (r.status === "fulfilled") rows.push(...r.value);
        else {
          errors.push(`${config.series[i]}: ${(r.reason as Error).message}`);
          if (r.reason instanceof HttpStatusError) retryAfter = Math.max(retryAfter, r.reason.retryAfterMs ?? 0);
        }
      });
      try {
        if (rows.length > 0) {
          const res = summaryOf(await deps.ingest.pushMacro(streamOf(rows), { signal }));
          logger.info({ points: rows.length, ...res }, "macro pushed");
          if (res.rejected > 0) logger.warn({ reasons: res.reasons }, "macro points refused by the service");
        }
      } catch (err) {
        if (signal.aborted) return;
        errors.push(`push failed: ${(err as Error).message}`);
      }
      if (errors.length === 0) {
        failures = 0;
        nextDueMs = now + config.refreshMs;
        report.success();
        return;
      }
      // Any failure retries the whole round sooner (re-sent points are duplicates).
      failures++;
      nextDueMs = now + Math.max(backoffMs(failures, FIRST_RETRY_MS, config.refreshMs, "none"), retryAfter);
      if (rows.length > 0 && !errors.some((e) => e.startsWith("push failed"))) report.success();
      report.failure(`FRED: ${errors.join("; ")}`);
      logger.warn({ failures, retryInMs: nextDueMs - now, errors }, "macro round failed");
    },
  };
}
