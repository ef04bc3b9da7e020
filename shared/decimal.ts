// Exact decimals. Quantities and money are JSON numbers with at most 6 decimal places, stored as numeric(20,6);
// arithmetic on them runs in integer millionths (BigInt), never on doubles, whose sums drift (0.1 + 0.2).

export const PLACES = 6;
const SCALE = 10n ** BigInt(PLACES);

/**
 * The largest magnitude a quantity, an amount or a total may have. With at most 15 significant digits, every
 * value with 6 decimal places is one JSON number that reads and prints back as itself.
 */
export const MAX_DECIMAL = 999_999_999.999999;
export const MAX_MICROS = 999_999_999_999_999n;

/** How many decimal places a number is written with: 1e-7 has 7, 1.5e3 none. */
export function decimalPlaces(value: number): number {
  const [mantissa = '', exponent = '0'] = String(Math.abs(value)).split('e');
  const fraction = mantissa.split('.')[1] ?? '';
  return Math.max(0, fraction.length - Number(exponent));
}

/** What keeps a number from being a decimal of ours (finite, in range, 6 places at most), or undefined. */
export function decimalProblem(value: number): string | undefined {
  if (!Number.isFinite(value)) return 'must be a finite number';
  if (Math.abs(value) > MAX_DECIMAL) return `must be between -${MAX_DECIMAL} and ${MAX_DECIMAL}`;
  if (decimalPlaces(value) > PLACES) return `must have at most ${PLACES} decimal places`;
  return undefined;
}

export function isDecimal(value: unknown): value is number {
  return typeof value === 'number' && decimalProblem(value) === undefined;
}

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/**
 * A decimal as an exact count of millionths, read from its shortest written form (a number) or its text (what
 * PostgreSQL sends for numeric), not by multiplying doubles. More than 6 places round half away from zero.
 */
export function toMicros(value: number | string): bigint {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const match = DECIMAL_TEXT.exec(text);
  if (!match || !(match[2] || match[3]) || (typeof value === 'number' && !Number.isFinite(value))) {
    throw new RangeError(`Not a finite decimal: ${text}`);
  }
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  const digits = BigInt(`${whole}${fraction}` || '0');
  const shift = Number(exponent) - fraction.length + PLACES;
  let micros: bigint;
  if (shift >= 0) {
    micros = digits * 10n ** BigInt(shift);
  } else {
    const divisor = 10n ** BigInt(-shift);
    micros = (digits + divisor / 2n) / divisor;
  }
  return sign === '-' ? -micros : micros;
}

/** Millionths as decimal text (`-12.5`, `3`): exact, for SQL parameters and messages. */
export function microsToText(micros: bigint): string {
  const magnitude = micros < 0n ? -micros : micros;
  const fraction = String(magnitude % SCALE).padStart(PLACES, '0').replace(/0+$/, '');
  return `${micros < 0n ? '-' : ''}${magnitude / SCALE}${fraction ? `.${fraction}` : ''}`;
}

/** Millionths as the JSON number they are: exact within MAX_DECIMAL. */
export function fromMicros(micros: bigint): number {
  return Number(microsToText(micros));
}

/** Σ a × b over the pairs, exact (each product in 10^-12 units), rounded half away from zero to 6 places once. */
export function sumOfProducts(pairs: Iterable<readonly [number, number]>): bigint {
  let sum = 0n;
  for (const [a, b] of pairs) sum += toMicros(a) * toMicros(b);
  const half = sum < 0n ? -SCALE / 2n : SCALE / 2n;
  return (sum + half) / SCALE;
}

export const ORDER_TOTAL_TOO_LARGE = `the order total (quantity × price over the lines) must be at most ${MAX_DECIMAL}`;

/** An order's total, Σ quantity × price over its lines, exact; undefined when it would exceed MAX_DECIMAL. */
export function orderTotal(lines: ReadonlyArray<{ quantity: number; price: number }>): number | undefined {
  const total = sumOfProducts(lines.map((line) => [line.quantity, line.price] as const));
  return total > MAX_MICROS ? undefined : fromMicros(total);
}
