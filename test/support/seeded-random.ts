/**
 * A seeded pseudo-random source for Monte Carlo checks: the same seed gives the same draws on
 * every machine, so a statistical test is deterministic (never flaky) while still being an
 * independent check of a formula by simulation.
 */
import { prng } from "../../src/market/demo-feed.ts";

/** Uniform draws in [0, 1) from mulberry32 (the demo feed's generator; plenty for test simulations). */
export function seededUniform(seed: number): () => number {
  return prng(seed);
}

/** Standard normal draws (Box–Muller) from a seeded uniform source. */
export function seededNormal(seed: number): () => number {
  const uniform = seededUniform(seed);
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const value = spare;
      spare = null;
      return value;
    }
    const u = 1 - uniform(); // (0, 1]: log is finite
    const v = uniform();
    const radius = Math.sqrt(-2 * Math.log(u));
    spare = radius * Math.sin(2 * Math.PI * v);
    return radius * Math.cos(2 * Math.PI * v);
  };
}
