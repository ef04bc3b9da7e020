import { NotFoundError } from '../../../shared/errors.ts';
import { resourceRoutes } from '../../framework/resource-routes.ts';
import { defineRoute, ok, type Resolution, type RouteDeps } from '../../framework/route.ts';
import { recordEvent, recordEvents } from '../../../db/events.ts';
import { isRecord } from '../../../shared/guards.ts';
import type { Problem } from '../../../shared/errors.ts';
import type { NewEvent } from '../../../shared/events.ts';
import { findItem, insertItem, listItems, toItem, updateItem, upsertItems } from './queries.ts';
import { CreateItem, Item, ItemBatchResult, ItemListQuery, MAX_BATCH_ITEMS, UpdateItem, UpsertItems } from './schema.ts';

const items = resourceRoutes({
  noun: 'item',
  path: '/items',
  tag: 'Items',
  record: Item,
  createBody: CreateItem,
  updateBody: UpdateItem,
  query: ItemListQuery,
  toRecord: toItem,
  find: findItem,
  insert: insertItem,
  update: updateItem,
  list: listItems,
  conflict: 'Another item already has this sku (the body carries its `existingId`)',
  events: { created: 'item.created', updated: 'item.updated' },
});

const archiveItem = defineRoute({
  method: 'delete', path: '/items/{id}', operationId: 'archiveItem', tag: 'Items',
  summary: 'Archive an item',
  description: 'Items are archived, never deleted: stock and orders keep referring to them. '
    + 'Archived items stay readable by id and leave lists unless `includeArchived=true`. Archiving twice is harmless.',
  success: { status: 200, description: 'The archived item', schema: Item },
  errors: { 404: 'No such item in this account' },
  handler: async ({ db, auth, params }) => ok(await db.transaction(async (trx) => {
    const current = await findItem(trx, auth.accountId, params.id ?? '');
    if (!current) throw new NotFoundError('Item');
    if (current.archived_at) return toItem(current);
    const item = toItem((await updateItem(trx, auth.accountId, current.id, { archived: true }))!);
    await recordEvent(trx, auth.accountId, { type: 'item.updated', data: item });
    return item;
  })),
});

/** Each sku once in the batch (400 naming both rows otherwise), and a name for every sku the account does not have yet. */
async function resolveBatch({ db, auth, body }: RouteDeps & { body: unknown; auth: { accountId: string } }): Promise<Resolution<undefined>> {
  const rows = isRecord(body) && Array.isArray(body.items) ? body.items : [];
  const skus = rows.map((row) => (isRecord(row) && typeof row.sku === 'string' ? row.sku : undefined));
  const problems: Problem[] = [];
  const first = new Map<string, number>();
  skus.forEach((sku, index) => {
    if (sku === undefined) return;
    const earlier = first.get(sku);
    if (earlier === undefined) {
      first.set(sku, index);
      return;
    }
    problems.push({ path: `items[${earlier}].sku`, message: `"${sku}" is also at items[${index}]: send each sku once` });
    problems.push({ path: `items[${index}].sku`, message: `"${sku}" is also at items[${earlier}]: send each sku once` });
  });
  const named = [...first.keys()];
  const existing = new Set(named.length ? (await db('items').where({ account_id: auth.accountId }).whereIn('sku', named).pluck('sku')) as string[] : []);
  rows.forEach((row, index) => {
    const sku = skus[index];
    if (sku !== undefined && !existing.has(sku) && isRecord(row) && row.name === undefined) {
      problems.push({ path: `items[${index}].name`, message: `is required: no item of your account has sku "${sku}" yet` });
    }
  });
  return { problems, resolved: undefined };
}

const upsert = defineRoute<Record<string, never>, UpsertItems>({
  method: 'post', path: '/items/batch', operationId: 'upsertItems', tag: 'Items',
  summary: 'Create or update items in bulk, by sku',
  description: `1 to ${MAX_BATCH_ITEMS} items in one transaction, all or none: an item of your account with the row's \`sku\` is updated `
    + 'with the fields the row gives, any other sku is created (it needs a `name`). Every problem of every row is named in one 400 '
    + '(`items[412].price`); a sku twice in the batch is a 400 naming both rows. Only rows that change something record an event '
    + '(`item.created`, `item.updated`). Set-based: the statements do not grow with the rows. Counts as one request against the rate limit.',
  body: UpsertItems,
  resolve: resolveBatch,
  success: { status: 200, description: 'Every item of the batch, and how many were created, updated and left unchanged', schema: ItemBatchResult },
  handler: async ({ db, auth, body }) => ok(await db.transaction(async (trx) => {
    const { rows, created, updated } = await upsertItems(trx, auth.accountId, body.items);
    const data = rows.map(toItem);
    const changed = data.filter((item) => created.has(item.id) || updated.has(item.id));
    await recordEvents(trx, auth.accountId, changed.map((item): NewEvent => ({ type: created.has(item.id) ? 'item.created' : 'item.updated', data: item })));
    return { data, created: created.size, updated: updated.size, unchanged: rows.length - created.size - updated.size };
  })),
});

const listNote = 'Archived items are left out unless `includeArchived=true`. '
  + '`/items` and `/inventory-items` list the same records and both accept `limit` and `size`.';

export const itemRoutes = [
  { ...items.list, description: listNote },
  items.get,
  items.create,
  upsert,
  items.update,
  archiveItem,
  { ...items.list, path: '/inventory-items', operationId: 'listInventoryItems', summary: 'List inventory items', description: listNote },
  { ...items.get, path: '/inventory-items/{id}', operationId: 'getInventoryItem', summary: 'Get an inventory item' },
];
