import test from 'ava';
import { batched } from '../jobs/batched.ts';

function recorder(fail?: (inputs: number[]) => boolean) {
  const batches: number[][] = [];
  let release: (() => void) | undefined;
  const run = async (inputs: number[]) => {
    batches.push(inputs);
    // The first batch is held until the test lets it go: what is called meanwhile must queue behind it.
    if (batches.length === 1) await new Promise<void>((resolve) => { release = resolve; });
    if (fail?.(inputs)) throw new Error(`batch ${inputs.join(',')} failed`);
    return inputs.map((input) => input * 10);
  };
  return { batches, run, release: () => release?.() };
}

test('calls made while a batch runs go together in the next one, each answered with its own output', async (t) => {
  const r = recorder();
  const call = batched(r.run, 100);
  const first = call(1);
  await new Promise((resolve) => setImmediate(resolve));
  const rest = [call(2), call(3), call(4)];
  r.release();
  t.deepEqual(await Promise.all([first, ...rest]), [10, 20, 30, 40]);
  t.deepEqual(r.batches, [[1], [2, 3, 4]]);
});

test('a batch carries at most maxBatch calls', async (t) => {
  const r = recorder();
  const call = batched(r.run, 2);
  const all = [1, 2, 3, 4, 5].map((n) => call(n));
  await new Promise((resolve) => setImmediate(resolve));
  r.release();
  t.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50]);
  t.deepEqual(r.batches, [[1, 2], [3, 4], [5]]);
});

test('a failed batch fails its own calls only; the next batch still runs', async (t) => {
  const r = recorder((inputs) => inputs.includes(1));
  const call = batched(r.run, 100);
  const first = call(1);
  await new Promise((resolve) => setImmediate(resolve));
  const second = call(2);
  r.release();
  await t.throwsAsync(first, { message: 'batch 1 failed' });
  t.is(await second, 20);
});
