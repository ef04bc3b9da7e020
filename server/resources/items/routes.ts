import { NotFoundError } from '../../../shared/errors.ts';
import { resourceRoutes } from '../../framework/resource-routes.ts';
import { defineRoute, ok } from '../../framework/route.ts';
import { recordEvent } from '../../../db/events.ts';
import { findItem, insertItem, listItems, toItem, updateItem } from './queries.ts';
import { CreateItem, Item, ItemListQuery, UpdateItem } from './schema.ts';

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

const listNote = 'Archived items are left out unless `includeArchived=true`. '
  + '`/items` and `/inventory-items` list the same records and both accept `limit` and `size`.';

export const itemRoutes = [
  { ...items.list, description: listNote },
  items.get,
  items.create,
  items.update,
  archiveItem,
  { ...items.list, path: '/inventory-items', operationId: 'listInventoryItems', summary: 'List inventory items', description: listNote },
  { ...items.get, path: '/inventory-items/{id}', operationId: 'getInventoryItem', summary: 'Get an inventory item' },
];
