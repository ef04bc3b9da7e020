import { randomUUID } from 'node:crypto';
import { countStock, OVERFLOW_CONFLICT, STALE_CONFLICT, type CountLine } from '../../../db/stock.ts';
import type { Problem } from '../../../shared/errors.ts';
import { checkReferences, resolveItemRows, type ItemRef } from '../../framework/references.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, type Resolution, type RouteDeps } from '../../framework/route.ts';
import { countRecord, findStockCount, listStockCounts, stockCountCtes, toStockCount } from './queries.ts';
import { CreateStockCount, MAX_COUNT_LINES, StockCount, StockCountListQuery } from './schema.ts';

const tag = 'Stock';
const checkLocation = checkReferences([{ table: 'locations', field: 'locationId' }]);

/** The location, and each line's item, by id or sku: every item once. */
async function resolveCount({ db, auth, body }: RouteDeps & { body: unknown; auth: { accountId: string } }): Promise<Resolution<Array<ItemRef | undefined>>> {
  const [location, { problems, items }] = await Promise.all([checkLocation({ db, auth, body }), resolveItemRows(db, auth.accountId, body, 'lines')]);
  const first = new Map<string, number>();
  const twice: Problem[] = [];
  items.forEach((item, index) => {
    if (!item) return;
    const earlier = first.get(item.id);
    if (earlier === undefined) first.set(item.id, index);
    else twice.push({ path: `lines[${index}]`, message: `counts the same item as lines[${earlier}] (${item.sku}): count each item once` });
  });
  return { problems: [...location.problems, ...problems, ...twice], resolved: items };
}

const counts = readRoutes({
  path: '/stock-counts', tag, noun: 'stock count', record: StockCount, query: StockCountListQuery,
  list: listStockCounts, find: findStockCount, toRecord: toStockCount,
  listDescription: 'Counts taken, oldest first, each with its lines.',
});

export const stockCountRoutes = [
  defineRoute<Record<string, never>, CreateStockCount, Array<ItemRef | undefined>>({
    method: 'post', path: '/stock-counts', operationId: 'createStockCount', tag,
    summary: 'Record a stock count',
    description: `Sets each line's level at \`locationId\` to \`countedQuantity\` (1 to ${MAX_COUNT_LINES} lines, items by \`itemId\` or \`sku\`, `
      + 'each once), in one transaction: the difference from what is on hand, checked under the levels\' locks, becomes a `count` '
      + 'movement (with its `stock.adjusted` event; none when they are equal). A count records what is physically there, so it may take '
      + 'reserved stock and leave a level oversold, which the line\'s `stockLevel` says. Send `expectedQuantity` to make it a '
      + 'compare-and-set: a level that changed since you read it makes the whole count a 409. Counts as one request against the rate limit.',
    body: CreateStockCount,
    resolve: resolveCount,
    success: { status: 201, description: 'The count, each line with the level before, the difference and the level it left', schema: StockCount },
    errors: { 409: `${STALE_CONFLICT} ${OVERFLOW_CONFLICT}` },
    handler: async ({ db, auth, body, resolved }) => {
      const items = resolved.map((item) => item!);
      const count = { id: randomUUID(), locationId: body.locationId, reason: body.reason ?? null, userId: auth.userId };
      const { lines, row } = await countStock<CountLine & { sku: string }, { created_at: string }>(db, {
        accountId: auth.accountId, userId: auth.userId, reason: count.reason, source: { type: 'stock_count', id: count.id },
        lines: body.lines.map((line, index) => ({
          itemId: items[index]!.id, sku: items[index]!.sku, locationId: body.locationId, counted: line.countedQuantity, expected: line.expectedQuantity,
        })),
      }, (q, planned) => stockCountCtes(q, auth.accountId, count, planned));
      return created(toStockCount(countRecord(auth.accountId, count, lines, row.created_at)));
    },
  }),
  counts.list,
  counts.get,
];
