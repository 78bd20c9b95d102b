/**
 * The lead's CPU for the checkpoints' JSON at a boundary: 2,000 engine states (400 coins × 5
 * timeframes) written as the market commit's jsonb parameters, as before run 10 (the engine's
 * JSON parsed back into an object, which drizzle stringified again) and since (the engine's JSON
 * itself). Median of 7 rounds; no database (what PostgreSQL receives is the same text).
 *
 *   node bench/checkpoint-json.ts
 */
import { type Candle, runSeries, serializeState } from "../src/engine/index.ts";

const STATES = 2_000;
const HOUR_MS = 3_600_000;

// A wandering price over 500 hourly candles: a state with its rings and pivots filled.
const candles: Candle[] = [];
let price = 100;
for (let i = 0; i < 500; i++) {
  const open = price;
  price *= 1 + (Math.sin(i * 1.7) + Math.sin(i * 0.31)) * 0.01;
  const [high, low] = [Math.max(open, price) * 1.005, Math.min(open, price) * 0.995];
  candles.push({ openTime: i * HOUR_MS, open, high, low, close: price, volume: 1_000 + i });
}
const state = runSeries(candles);

function medianMs(write: () => string): number {
  const rounds: number[] = [];
  for (let r = 0; r < 7; r++) {
    const start = performance.now();
    for (let i = 0; i < STATES; i++) write();
    rounds.push(performance.now() - start);
  }
  return rounds.sort((a, b) => a - b)[3]!;
}

const before = medianMs(() => JSON.stringify(JSON.parse(serializeState(state))));
const after = medianMs(() => serializeState(state));
console.log(
  `${STATES} checkpoints of ${serializeState(state).length} bytes: ` +
    `parsed and stringified again ${before.toFixed(1)} ms, the engine's JSON alone ${after.toFixed(1)} ms`,
);
