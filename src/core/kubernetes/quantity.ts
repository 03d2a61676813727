/**
 * Kubernetes `resource.Quantity` strings (k8s.io/apimachinery/pkg/api/resource), as the HPA
 * controller reads them from the metrics APIs and as HPA targets are written.
 *
 * Grammar: `<sign>? <digits>[.<digits>] <suffix>?` where the suffix is a decimal SI suffix
 * (`n u m k M G T P E`), a binary suffix (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent
 * (`e3`, `E-2`, `e+6`). All arithmetic is done on exact decimals (BigInt mantissa and a
 * power-of-ten exponent); a double is only produced at the very end of parsing, and
 * formatting starts from the double's shortest round-trip decimal string.
 *
 * Rounding, as Kubernetes does it: parsing rounds a value finer than 1n up to the next nano,
 * away from zero (`0.1n` -> `1n`, `-0.1n` -> `-1n`). Formatting a double rounds it to the
 * nearest nano (half away from zero), so float noise (`0.1 + 0.2`) does not leak into the
 * string. Binary-suffixed values are capped at 2^63-1 in magnitude, as Kubernetes caps them.
 *
 * Differences from Go's `ParseQuantity`, on purpose: the inputs `+`, `-` and `.` (no digit at
 * all) are rejected, where Go's scanner reads them as 0 despite its own grammar.
 *
 * @module
 */

/** An exact decimal: `m * 10^e`. */
interface Decimal {
  m: bigint;
  e: number;
}

const QUANTITY_RE = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

const DECIMAL_SUFFIX_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const BINARY_SUFFIX_EXPONENT: Record<string, bigint> = {
  Ki: 10n,
  Mi: 20n,
  Gi: 30n,
  Ti: 40n,
  Pi: 50n,
  Ei: 60n,
};

const EXPONENT_SUFFIX: Record<number, string> = {
  [-9]: "n",
  [-6]: "u",
  [-3]: "m",
  0: "",
  3: "k",
  6: "M",
  9: "G",
  12: "T",
  15: "P",
  18: "E",
};

const MAX_INT64 = (1n << 63n) - 1n;
const MAX_INT32 = 2147483647;
const NANO = -9;

/** Parse a quantity string into an exact decimal, rounded up to nano precision. */
function parseDecimal(input: string): Decimal {
  const match = QUANTITY_RE.exec(input);
  const intPart = match?.[2] ?? "";
  const fracPart = match?.[3] ?? "";
  if (!match || intPart.length + fracPart.length === 0) {
    throw new Error(
      `invalid quantity "${input}" (use digits with an optional suffix, e.g. 500m, 1.5, 2k, 1Gi, 1e3)`,
    );
  }
  const negative = match[1] === "-";
  const suffix = match[4] ?? "";
  let m = BigInt(intPart + fracPart || "0");
  let e = -fracPart.length;
  let binary = false;
  if (suffix in DECIMAL_SUFFIX_EXPONENT) {
    e += DECIMAL_SUFFIX_EXPONENT[suffix];
  } else if (suffix in BINARY_SUFFIX_EXPONENT) {
    m <<= BINARY_SUFFIX_EXPONENT[suffix];
    binary = true;
  } else {
    const exponent = Number(suffix.slice(1));
    if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_INT32) {
      throw new Error(`invalid quantity "${input}": exponent out of range`);
    }
    e += exponent;
  }
  let d = roundMagnitude({ m, e }, "up");
  if (binary && compareMagnitude(d, MAX_INT64) > 0) d = { m: MAX_INT64, e: 0 };
  return negative ? { m: -d.m, e: d.e } : d;
}

/**
 * Round a non-negative decimal to nano precision: `up` rounds any remainder away from zero,
 * `nearest` rounds half away from zero. The sign is handled by the callers.
 */
function roundMagnitude(d: Decimal, mode: "up" | "nearest"): Decimal {
  let m = d.m < 0n ? -d.m : d.m;
  const sign = d.m < 0n ? -1n : 1n;
  if (m === 0n) return { m: 0n, e: 0 };
  if (d.e >= NANO) return d;
  const shift = NANO - d.e;
  const digits = m.toString().length;
  if (shift > digits) {
    // |value| < 0.1n: no power of ten needs computing (the exponent may be huge).
    return mode === "up" ? { m: sign, e: NANO } : { m: 0n, e: 0 };
  }
  const p = 10n ** BigInt(shift);
  const q = m / p;
  const r = m % p;
  m = q;
  if (mode === "up" ? r > 0n : r * 2n >= p) m += 1n;
  return m === 0n ? { m: 0n, e: 0 } : { m: sign * m, e: NANO };
}

/** Compare |d| with a non-negative integer. */
function compareMagnitude(d: Decimal, n: bigint): number {
  const m = d.m < 0n ? -d.m : d.m;
  let left = m;
  let right = n;
  if (d.e >= 0) {
    // Beyond 40 digits the value exceeds any int64 bound; avoid building 10^hugeExponent.
    if (d.e > 40) return m === 0n ? (n === 0n ? 0 : -1) : 1;
    left = m * 10n ** BigInt(d.e);
  } else {
    right = n * 10n ** BigInt(-d.e);
  }
  return left === right ? 0 : left > right ? 1 : -1;
}

/** Canonical DecimalSI string of an exact decimal already at nano precision or coarser. */
function formatDecimal(d: Decimal): string {
  let { m, e } = d;
  if (m === 0n) return "0";
  while (m % 10n === 0n) {
    m /= 10n;
    e += 1;
  }
  const lower = ((e % 3) + 3) % 3;
  if (lower > 0) {
    m *= 10n ** BigInt(lower);
    e -= lower;
  }
  const suffix = EXPONENT_SUFFIX[e];
  // Beyond E, Kubernetes falls back to the decimal exponent form (1e21, 10e21, 1e24).
  return `${m}${suffix ?? `e${e}`}`;
}

function toNumber(d: Decimal): number {
  if (d.m === 0n) return 0;
  return Number(`${d.m}e${d.e}`);
}

/**
 * Parse a Kubernetes quantity string into a number. Values finer than 1n are rounded up
 * (away from zero) to the next nano, as Kubernetes does.
 *
 * Throws on a malformed string (quoting it) and on a value beyond the range of a double.
 *
 * @example
 * ```ts
 * parseQuantity("500m"); // 0.5
 * parseQuantity("1Ki"); // 1024
 * parseQuantity("1e3"); // 1000
 * ```
 */
export function parseQuantity(s: string): number {
  const n = toNumber(parseDecimal(s));
  if (!Number.isFinite(n)) throw new Error(`quantity "${s}" is out of range`);
  return n;
}

/**
 * Format a number as a canonical DecimalSI quantity string: rounded to the nearest nano,
 * trailing zeros moved into the exponent, the exponent lowered to a multiple of 3 and named
 * by its suffix (`n u m "" k M G T P E`); beyond `E` the exponent form (`1e21`) is used.
 *
 * Throws on NaN and infinities.
 *
 * @example
 * ```ts
 * formatQuantity(0.5); // "500m"
 * formatQuantity(1.2e6); // "1200k"
 * formatQuantity(0.1 + 0.2); // "300m"
 * ```
 */
export function formatQuantity(n: number): string {
  if (typeof n !== "number" || !Number.isFinite(n)) {
    throw new Error(`cannot format ${String(n)} as a quantity`);
  }
  // String(n) is the shortest decimal string that round-trips to the same double.
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(n));
  if (!match) throw new Error(`cannot format ${String(n)} as a quantity`);
  const frac = match[3] ?? "";
  const m = BigInt(match[2] + frac);
  const e = Number(match[4] ?? "0") - frac.length;
  const rounded = roundMagnitude({ m, e }, "nearest");
  return formatDecimal(match[1] === "-" ? { m: -rounded.m, e: rounded.e } : rounded);
}

/**
 * Parse a quantity string and print it in canonical DecimalSI form, exactly (no detour
 * through a double, so long mantissas keep every digit).
 *
 * Note: Kubernetes keeps the input's format when it re-prints a quantity (`1Ki` stays `1Ki`,
 * `1e3` stays `1e3`); this always prints DecimalSI (`1024`, `1k`), the form the metrics APIs
 * of this adapter emit.
 *
 * @example
 * ```ts
 * canonicalQuantity("1.5"); // "1500m"
 * canonicalQuantity("0.1n"); // "1n"
 * canonicalQuantity("1Ki"); // "1024"
 * ```
 */
export function canonicalQuantity(s: string): string {
  return formatDecimal(parseDecimal(s));
}

/** Bytes in Kubernetes' canonical BinarySI form (`200Mi`, `1Gi`, `1536Mi`). */
export function binaryQuantity(bytes: bigint): string {
  const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  let n = bytes;
  let i = 0;
  while (i < suffixes.length - 1 && n !== 0n && n % 1024n === 0n) {
    n /= 1024n;
    i++;
  }
  return `${n}${suffixes[i]}`;
}

const BINARY_EXPONENT: Readonly<Record<string, bigint>> = {
  Ki: 10n,
  Mi: 20n,
  Gi: 30n,
  Ti: 40n,
  Pi: 50n,
  Ei: 60n,
};

/**
 * A quantity as the API server stores it, so that the HPA read back equals the one made:
 * decimal ones in canonical DecimalSI form, binary ones in canonical BinarySI form (whole bytes
 * of at least 1Ki), exponent forms as written.
 */
export function storedQuantity(s: string): string {
  const m = /^(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei)$/.exec(s);
  if (m) {
    const frac = m[2] ?? "";
    const scaled = BigInt((m[1] || "0") + frac) << BINARY_EXPONENT[m[3]];
    const div = 10n ** BigInt(frac.length);
    if (scaled % div === 0n && scaled / div >= 1024n) return binaryQuantity(scaled / div);
    return canonicalQuantity(s);
  }
  return /[eE]/.test(s) ? s : canonicalQuantity(s);
}
