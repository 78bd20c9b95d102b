/**
 * The standard normal distribution's CDF Φ and its inverse, for the confidence statistics of
 * statistics.ts. Pure and dependency-free: well-known published methods, because the
 * maintained npm alternative (stdlib's normal-cdf / normal-quantile) brings some twenty
 * micro-packages and native-addon helpers for two functions.
 */

const SQRT_2PI = Math.sqrt(2 * Math.PI);

// Where the series hands over to the tail's continued fraction.
const TAIL_FROM = 3;
// Terms of the continued fraction: from x = 2.5 on, more change nothing in double precision.
const TAIL_TERMS = 60;

/** Standard normal density φ(x). */
export function normalDensity(x: number): number {
  return Math.exp(-0.5 * x * x) / SQRT_2PI;
}

/**
 * 1 − Φ(t) for t ≥ 3 by Laplace's continued fraction φ(t) / (t + 1/(t + 2/(t + 3/(t + …)))),
 * evaluated from the 60th term back: relative accuracy where the series would only give absolute.
 */
function upperTail(t: number): number {
  let fraction = t;
  for (let k = TAIL_TERMS; k >= 1; k--) fraction = t + k / fraction;
  return normalDensity(t) / fraction;
}

/**
 * Φ(x), the standard normal CDF. For |x| < 3 by Marsaglia's series (G. Marsaglia, "Evaluating
 * the Normal Distribution", Journal of Statistical Software 11(4), 2004):
 * Φ(x) = ½ + φ(x)·(x + x³/3 + x⁵/(3·5) + …), whose terms all have the sign of x, so nothing
 * cancels (absolute error below 1e-15). Beyond, the tail area by Laplace's continued fraction,
 * which keeps about 13 significant digits however small it gets, so Φ stays monotone and never
 * leaves [0, 1].
 */
export function normalCdf(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x <= -TAIL_FROM) return upperTail(-x);
  if (x >= TAIL_FROM) return 1 - upperTail(x);
  let term = x;
  let sum = x;
  const x2 = x * x;
  for (let i = 3; sum + term !== sum; i += 2) {
    term *= x2 / i;
    sum += term;
  }
  return 0.5 + sum * normalDensity(x);
}

// Wichura's AS 241 (PPND16): rational approximations of Φ⁻¹ with about 16 significant digits,
// M. J. Wichura, "Algorithm AS 241: The Percentage Points of the Normal Distribution",
// Applied Statistics 37(3), 1988, pp. 477–484. Coefficients in ascending powers.
// biome-ignore-start lint/correctness/noPrecisionLoss: the coefficients as published, digits beyond a double's included
const CENTRAL_NUM = [
  3.387132872796366608, 133.14166789178437745, 1971.5909503065514427, 13731.693765509461125, 45921.953931549871457,
  67265.770927008700853, 33430.575583588128105, 2509.0809287301226727,
];
const CENTRAL_DEN = [
  1, 42.313330701600911252, 687.1870074920579083, 5394.1960214247511077, 21213.794301586595867, 39307.89580009271061,
  28729.085735721942674, 5226.495278852854561,
];
const NEAR_NUM = [
  1.42343711074968357734, 4.6303378461565452959, 5.7694972214606914055, 3.64784832476320460504, 1.27045825245236838258,
  0.24178072517745061177, 0.0227238449892691845833, 7.7454501427834140764e-4,
];
const NEAR_DEN = [
  1, 2.05319162663775882187, 1.6763848301838038494, 0.68976733498510000455, 0.14810397642748007459,
  0.0151986665636164571966, 5.475938084995344946e-4, 1.05075007164441684324e-9,
];
const TAIL_NUM = [
  6.6579046435011037772, 5.4637849111641143699, 1.7848265399172913358, 0.29656057182850489123, 0.026532189526576123093,
  0.0012426609473880784386, 2.71155556874348757815e-5, 2.01033439929228813265e-7,
];
const TAIL_DEN = [
  1, 0.59983220655588793769, 0.13692988092273580531, 0.0148753612908506148525, 7.868691311456132591e-4,
  1.8463183175100546818e-5, 1.4215117583164458887e-7, 2.04426310338993978564e-15,
];
// biome-ignore-end lint/correctness/noPrecisionLoss: end of the published coefficients

function polynomial(coefficients: readonly number[], x: number): number {
  let value = 0;
  for (let i = coefficients.length - 1; i >= 0; i--) value = value * x + coefficients[i]!;
  return value;
}

/**
 * Φ⁻¹(p), the standard normal quantile, by Wichura's AS 241 (relative error about 1e-16).
 * −∞ at 0 and +∞ at 1; a RangeError for anything outside [0, 1].
 */
export function normalQuantile(p: number): number {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`a probability must be in [0, 1], got ${p}`);
  if (p === 0) return Number.NEGATIVE_INFINITY;
  if (p === 1) return Number.POSITIVE_INFINITY;
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (q * polynomial(CENTRAL_NUM, r)) / polynomial(CENTRAL_DEN, r);
  }
  let r = Math.sqrt(-Math.log(q < 0 ? p : 1 - p));
  let x: number;
  if (r <= 5) {
    r -= 1.6;
    x = polynomial(NEAR_NUM, r) / polynomial(NEAR_DEN, r);
  } else {
    r -= 5;
    x = polynomial(TAIL_NUM, r) / polynomial(TAIL_DEN, r);
  }
  return q < 0 ? -x : x;
}
