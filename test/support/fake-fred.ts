/**
 * A fake FRED API (root /fred) answering /series and /series/observations with file_type=json
 * in FRED's documented shapes (observations with realtime_start, realtime_end, date and value,
 * "." for a missing value), refusing a wrong api_key as FRED does (400, error_code and
 * error_message). Observations can be revised during a test.
 */
import { type FakeHttp, json, startFakeHttp } from "./fake-http.ts";

export interface FakeSeries {
  unitsShort: string;
  /** date (YYYY-MM-DD) → value as FRED writes it ("." when missing). */
  observations: Record<string, string>;
}

export interface FakeFred extends FakeHttp {
  /** What the fake serves; change it in place (a revision). */
  readonly series: Record<string, FakeSeries>;
  /** Sets the date FRED calls today (realtime_start / realtime_end). */
  setToday(date: string): void;
}

/** Starts the fake with the one valid `apiKey`. */
export async function startFakeFred(
  apiKey: string,
  series: Record<string, FakeSeries>,
  today: string,
): Promise<FakeFred> {
  const state = { today };
  const fake = await startFakeHttp((req) => {
    if (req.query.get("api_key") !== apiKey) {
      return json(400, {
        error_code: 400,
        error_message:
          "Bad Request.  The value for variable api_key is not registered.  Read " +
          "https://fred.stlouisfed.org/docs/api/api_key.html for more information.",
      });
    }
    if (req.query.get("file_type") !== "json")
      return { status: 200, body: "<xml/>", headers: { "content-type": "text/xml" } };
    const id = req.query.get("series_id") ?? "";
    const s = series[id];
    if (!s) return json(400, { error_code: 400, error_message: "Bad Request.  The series does not exist." });
    const realtime = { realtime_start: state.today, realtime_end: state.today };
    if (req.path === "/fred/series") {
      return json(200, {
        ...realtime,
        seriess: [{ id, ...realtime, title: id, units: s.unitsShort, units_short: s.unitsShort, frequency_short: "D" }],
      });
    }
    if (req.path === "/fred/series/observations") {
      const start = req.query.get("observation_start") ?? "1776-07-04";
      const observations = Object.entries(s.observations)
        .filter(([date]) => date >= start)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([date, value]) => ({ ...realtime, date, value }));
      return json(200, {
        ...realtime,
        observation_start: start,
        observation_end: "9999-12-31",
        units: "lin",
        output_type: 1,
        file_type: "json",
        order_by: "observation_date",
        sort_order: "asc",
        count: observations.length,
        offset: 0,
        limit: 100000,
        observations,
      });
    }
    return json(404, { error_code: 404, error_message: "Not Found" });
  });
  return {
    ...fake,
    series,
    setToday(date: string) {
      state.today = date;
    },
  };
}
