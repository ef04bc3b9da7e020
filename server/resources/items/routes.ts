import { NotFoundError } from '../../errors.ts';
import { resourceRoutes } from '../../resource-routes.ts';
import { defineRoute, ok } from '../../route.ts';
import { findItem, insertItem, listItems, toItem, updateItem } from './queries.ts';
import { CreateItem, Item, ItemListQuery, UpdateItem } from './schema.ts';

const items = resourceRoutes({
  name: 'Item',
  path: '/items',
  tag: 'Items',
  record: Item,
  createBody: CreateItem,
  updateBody: UpdateItem,
  listQuery: ItemListQuery,
  toRecord: toItem,
  find: findItem,
  insert: insertItem,
  update: updateItem,
  list: listItems,
  conflict: 'Another item already has this sku (the body carries its `existingId`)',
});

const archiveItem = defineRoute({
  method: 'delete', path: '/items/{id}', operationId: 'archiveItem', tag: 'Items',
  summary: 'Archive an item',
  description: 'Items are archived, never deleted: stock and orders keep referring to them. '
    + 'Archived items stay readable by id and leave lists unless `includeArchived=true`. Archiving twice is harmless.',
  success: { status: 200, description: 'The archived item', schema: Item },
  errors: { 404: 'No such item in this account' },
  handler: async ({ db, auth, params }) => {
    const row = await updateItem(db, auth.accountId, params.id ?? '', { archived: true });
    if (!row) throw new NotFoundError('Item');
    return ok(toItem(row));
  },
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
