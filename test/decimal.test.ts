// The one home of exact decimal arithmetic (shared/decimal.ts): millionths in, millionths out, never a double sum.
import test from 'ava';
import fc from 'fast-check';
import {
  decimalProblem, fromMicros, MAX_DECIMAL, MAX_MICROS, microsToText, orderTotal, sumOfProducts, toMicros,
} from '../shared/decimal.ts';

const runs = { numRuns: Number(process.env.FUZZ_RUNS ?? 200) };
const micros = fc.bigInt({ min: -MAX_MICROS, max: MAX_MICROS });

test('every decimal in range reads back as the same JSON number and the same millionths', (t) => {
  fc.assert(fc.property(micros, (value) => {
    const number = fromMicros(value);
    t.is(toMicros(number), value);
    t.is(toMicros(JSON.parse(JSON.stringify(number)) as number), value);
    t.is(decimalProblem(number), undefined);
  }), runs);
});

test('toMicros reads numbers from their written form, not by multiplying doubles', (t) => {
  t.is(toMicros(0.1), 100_000n);
  t.is(toMicros(1.005), 1_005_000n); // 1.005 * 1e6 is 1004999.9999999999 in doubles
  t.is(toMicros(MAX_DECIMAL), MAX_MICROS);
  t.is(toMicros(-0.000001), -1n);
  t.is(toMicros(1e-7), 0n);
  t.is(toMicros(5e-7), 1n);
  t.is(toMicros(1.5e21), 1_500_000_000_000_000_000_000_000_000n);
  t.is(toMicros('9999999999.999989'), 9_999_999_999_999_989n); // numeric text from PostgreSQL, past 2^53 millionths
  t.is(toMicros('-12.500000'), -12_500_000n);
  t.throws(() => toMicros(Number.NaN), { instanceOf: RangeError });
  t.throws(() => toMicros('12abc'), { instanceOf: RangeError });
});

test('microsToText prints the exact decimal', (t) => {
  t.is(microsToText(9_999_999_999_999_989n), '9999999999.999989');
  t.is(microsToText(-12_500_000n), '-12.5');
  t.is(microsToText(3_000_000n), '3');
  t.is(microsToText(0n), '0');
  t.is(microsToText(-1n), '-0.000001');
});

test('sumOfProducts is exact: the rational sum, rounded half away from zero once', (t) => {
  const small = fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }).map(fromMicros);
  fc.assert(fc.property(fc.array(fc.tuple(small, small), { maxLength: 20 }), (pairs) => {
    // In 10^-12 units, each product is an exact integer.
    const exact = pairs.reduce((sum, [a, b]) => sum + toMicros(a) * toMicros(b), 0n);
    const rounded = sumOfProducts(pairs);
    const error = exact - rounded * 1_000_000n;
    const away = error === 0n || (error > 0n) === (exact < 0n); // a tie rounds away from zero
    t.true(error < 500_000n && error > -500_000n || (error === 500_000n || error === -500_000n) && away, `${exact} rounded to ${rounded}`);
  }), runs);
});

test('an order total is exact, and undefined when it would pass the largest amount', (t) => {
  t.is(orderTotal([{ quantity: 3, price: 0.1 }, { quantity: 0.000001, price: 0.5 }]), 0.300001);
  t.is(orderTotal([{ quantity: 0.1, price: 0.2 }]), 0.02);
  t.is(orderTotal([{ quantity: 1, price: MAX_DECIMAL }]), MAX_DECIMAL);
  t.is(orderTotal([{ quantity: 1, price: MAX_DECIMAL }, { quantity: 0.000001, price: 1 }]), undefined);
});
