// Bulk writes, timed by one client sending one batch after another (how an integrator pushes a catalogue): items
// upserted 1,000 at a time, first as inserts, then as updates of the same skus; adjustments of 1,000 rows over
// 1,000 items; stock counts of 1,000 lines.
import { API_PREFIX } from '../server/routes.ts';

export interface BatchFigures {
  itemInsertsPerSecond: number;
  itemUpdatesPerSecond: number;
  adjustmentRowsPerSecond: number;
  countMsP50: number;
  countMsMax: number;
  /** Any answer that was not a 2xx: none expected. */
  failures: number;
}

const BATCH = 1000;

export async function runBatchBench(base: string, apiKey: string, options: { items: number; itemIds: string[]; locationIds: string[] }): Promise<BatchFigures> {
  let failures = 0;
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}${API_PREFIX}${path}`, {
      method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    await response.arrayBuffer();
    if (!response.ok) failures += 1;
  };
  const rowsPerSecond = async (batches: number, send: (batch: number) => Promise<void>) => {
    const started = performance.now();
    for (let batch = 0; batch < batches; batch += 1) await send(batch);
    return Math.round((batches * BATCH) / ((performance.now() - started) / 1000));
  };
  const upsert = (round: string) => (batch: number) => post('/items/batch', {
    items: Array.from({ length: BATCH }, (_, i) => ({ sku: `BULK-${batch * BATCH + i}`, name: `Bulk item ${batch * BATCH + i} ${round}`, price: 1.5 })),
  });
  const itemBatches = Math.ceil(options.items / BATCH);
  const itemInsertsPerSecond = await rowsPerSecond(itemBatches, upsert('first'));
  const itemUpdatesPerSecond = await rowsPerSecond(itemBatches, upsert('second'));

  const items = options.itemIds.slice(0, BATCH);
  const pickLocation = () => options.locationIds[Math.floor(Math.random() * options.locationIds.length)]!;
  const adjustmentRowsPerSecond = await rowsPerSecond(20, () => post('/stock-adjustments/batch', {
    adjustments: items.map((itemId) => ({ itemId, locationId: pickLocation(), quantity: 1 + Math.floor(Math.random() * 5), reason: 'bench' })),
  }));

  const countMs: number[] = [];
  const location = options.locationIds[0]!;
  for (let round = 0; round < 10; round += 1) {
    const started = performance.now();
    await post('/stock-counts', { locationId: location, reason: 'bench', lines: items.map((itemId) => ({ itemId, countedQuantity: Math.floor(Math.random() * 100) })) });
    countMs.push(performance.now() - started);
  }
  countMs.sort((a, b) => a - b);
  return {
    itemInsertsPerSecond, itemUpdatesPerSecond, adjustmentRowsPerSecond,
    countMsP50: Math.round(countMs[Math.floor(countMs.length / 2)]!), countMsMax: Math.round(countMs.at(-1)!), failures,
  };
}
