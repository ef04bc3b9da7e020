import { randomUUID } from 'node:crypto';
import { ValidationError } from '../../framework/errors.ts';
import { requireReferences } from '../../framework/references.ts';
import { getRoute, listRoute } from '../../framework/resource-routes.ts';
import { created, defineRoute } from '../../framework/route.ts';
import { moveStock, toMovement } from './ledger.ts';
import {
  findAdjustment, findTransfer, insertAdjustment, insertTransfer, listAdjustments, listStockLevels, listStockMovements,
  listTransfers, toAdjustment, toStockLevel, toTransfer,
} from './queries.ts';
import {
  CreateStockAdjustment, CreateStockTransfer, StockAdjustment, StockAdjustmentListQuery, StockLevel, StockLevelListQuery,
  StockMovement, StockMovementListQuery, StockTransfer, StockTransferListQuery,
} from './schema.ts';

const tag = 'Stock';
const insufficient = 'The change would take a stock level below zero; nothing was written. `shortages` lists every level that is short (`itemId`, `locationId`, `available`, `requested`); the first is repeated at the top level.';

export const stockRoutes = [
  listRoute({
    path: '/stock-levels', operationId: 'listStockLevels', tag,
    summary: 'List stock levels',
    description: 'One entry per item and location that ever held stock.',
    name: 'StockLevel', record: StockLevel, query: StockLevelListQuery, list: listStockLevels, toRecord: toStockLevel,
  }),

  listRoute({
    path: '/stock-movements', operationId: 'listStockMovements', tag,
    summary: 'List stock movements (the ledger)',
    description: 'Every change of stock, whatever caused it, oldest first. Movements never change.',
    name: 'StockMovement', record: StockMovement, query: StockMovementListQuery, list: listStockMovements, toRecord: toMovement,
  }),

  defineRoute({
    method: 'post', path: '/stock-adjustments', operationId: 'createStockAdjustment', tag,
    summary: 'Adjust stock',
    description: 'Adds (positive) or removes (negative) stock of an item at a location: damage, cycle counts, receiving fixes. '
      + 'Records one movement and a `stock.adjusted` event in the same transaction.',
    body: CreateStockAdjustment,
    success: { status: 201, description: 'The adjustment, with the level it left', schema: StockAdjustment },
    errors: { 409: insufficient },
    handler: async ({ db, auth, body }) => {
      const row = await db.transaction(async (trx) => {
        await requireReferences(trx, auth.accountId, [
          { table: 'items', id: body.itemId, path: 'itemId' },
          { table: 'locations', id: body.locationId, path: 'locationId' },
        ]);
        const id = randomUUID();
        const [applied] = await moveStock(trx, {
          accountId: auth.accountId, userId: auth.userId, type: 'adjustment', reason: body.reason,
          source: { type: 'stock_adjustment', id },
          changes: [{ itemId: body.itemId, locationId: body.locationId, quantity: body.quantity }],
        });
        return insertAdjustment(trx, auth.accountId, {
          id, item_id: body.itemId, location_id: body.locationId, quantity: body.quantity, reason: body.reason,
          level_after: applied!.level, created_by: auth.userId,
        });
      });
      return created(toAdjustment(row));
    },
  }),

  listRoute({
    path: '/stock-adjustments', operationId: 'listStockAdjustments', tag, summary: 'List stock adjustments',
    name: 'StockAdjustment', record: StockAdjustment, query: StockAdjustmentListQuery, list: listAdjustments, toRecord: toAdjustment,
  }),

  getRoute({
    path: '/stock-adjustments/{id}', operationId: 'getStockAdjustment', tag, summary: 'Get a stock adjustment',
    name: 'Stock adjustment', record: StockAdjustment, find: findAdjustment, toRecord: toAdjustment,
  }),

  defineRoute({
    method: 'post', path: '/stock-transfers', operationId: 'createStockTransfer', tag,
    summary: 'Transfer stock between locations',
    description: 'Moves stock of one item from one location to another: two movements in one transaction, or neither.',
    body: CreateStockTransfer,
    success: { status: 201, description: 'The transfer, with the levels it left', schema: StockTransfer },
    errors: { 409: insufficient },
    handler: async ({ db, auth, body }) => {
      if (body.fromLocationId === body.toLocationId) throw ValidationError.of('toLocationId', 'must differ from fromLocationId');
      const row = await db.transaction(async (trx) => {
        await requireReferences(trx, auth.accountId, [
          { table: 'items', id: body.itemId, path: 'itemId' },
          { table: 'locations', id: body.fromLocationId, path: 'fromLocationId' },
          { table: 'locations', id: body.toLocationId, path: 'toLocationId' },
        ]);
        const id = randomUUID();
        const [from, to] = await moveStock(trx, {
          accountId: auth.accountId, userId: auth.userId, type: 'transfer', reason: body.reason ?? null,
          source: { type: 'stock_transfer', id },
          changes: [
            { itemId: body.itemId, locationId: body.fromLocationId, quantity: -body.quantity },
            { itemId: body.itemId, locationId: body.toLocationId, quantity: body.quantity },
          ],
        });
        return insertTransfer(trx, auth.accountId, {
          id, item_id: body.itemId, from_location_id: body.fromLocationId, to_location_id: body.toLocationId,
          quantity: body.quantity, reason: body.reason ?? null, from_level_after: from!.level, to_level_after: to!.level,
          created_by: auth.userId,
        });
      });
      return created(toTransfer(row));
    },
  }),

  listRoute({
    path: '/stock-transfers', operationId: 'listStockTransfers', tag, summary: 'List stock transfers',
    name: 'StockTransfer', record: StockTransfer, query: StockTransferListQuery, list: listTransfers, toRecord: toTransfer,
  }),

  getRoute({
    path: '/stock-transfers/{id}', operationId: 'getStockTransfer', tag, summary: 'Get a stock transfer',
    name: 'Stock transfer', record: StockTransfer, find: findTransfer, toRecord: toTransfer,
  }),
];
