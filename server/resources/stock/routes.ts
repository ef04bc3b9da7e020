import { randomUUID } from 'node:crypto';
import { checkReferences } from '../../framework/references.ts';
import { listRoute, readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute } from '../../framework/route.ts';
import { moveStock, OVERFLOW_CONFLICT, SHORTAGE_CONFLICT, toMovement } from '../../../db/stock.ts';
import {
  findAdjustment, findTransfer, insertAdjustment, insertTransfer, listAdjustments, listStockLevels, listStockMovements,
  listTransfers, toAdjustment, toStockLevel, toTransfer,
} from './queries.ts';
import {
  CreateStockAdjustment, CreateStockTransfer, StockAdjustment, StockAdjustmentListQuery, StockLevel, StockLevelListQuery,
  StockMovement, StockMovementListQuery, StockTransfer, StockTransferListQuery,
} from './schema.ts';

const tag = 'Stock';
const insufficient = `${SHORTAGE_CONFLICT} ${OVERFLOW_CONFLICT}`;

const adjustments = readRoutes({
  path: '/stock-adjustments', tag, noun: 'stock adjustment', record: StockAdjustment, query: StockAdjustmentListQuery,
  list: listAdjustments, find: findAdjustment, toRecord: toAdjustment,
});

const transfers = readRoutes({
  path: '/stock-transfers', tag, noun: 'stock transfer', record: StockTransfer, query: StockTransferListQuery,
  list: listTransfers, find: findTransfer, toRecord: toTransfer,
});

export const stockRoutes = [
  listRoute({
    path: '/stock-levels', tag, noun: 'stock level', record: StockLevel, query: StockLevelListQuery,
    list: listStockLevels, toRecord: toStockLevel,
    listDescription: 'One entry per item and location that ever held stock.',
  }),

  listRoute({
    path: '/stock-movements', tag, noun: 'stock movement', record: StockMovement, query: StockMovementListQuery,
    list: listStockMovements, toRecord: toMovement,
    listDescription: 'The ledger: every change of stock, whatever caused it, oldest first. Movements never change.',
  }),

  defineRoute({
    method: 'post', path: '/stock-adjustments', operationId: 'createStockAdjustment', tag,
    summary: 'Adjust stock',
    description: 'Adds (positive) or removes (negative) stock of an item at a location: damage, cycle counts, receiving fixes. '
      + 'Records one movement and a `stock.adjusted` event in the same transaction.',
    body: CreateStockAdjustment,
    resolve: checkReferences([{ table: 'items', field: 'itemId' }, { table: 'locations', field: 'locationId' }]),
    success: { status: 201, description: 'The adjustment, with the level it left', schema: StockAdjustment },
    errors: { 409: insufficient },
    handler: async ({ db, auth, body }) => created(toAdjustment(await db.transaction(async (trx) => {
      const id = randomUUID();
      const [applied] = await moveStock(trx, {
        accountId: auth.accountId, userId: auth.userId, type: 'adjustment', reason: body.reason,
        source: { type: 'stock_adjustment', id },
        // A count or a loss: what is physically there, reserved or not.
        changes: [{ itemId: body.itemId, locationId: body.locationId, quantity: body.quantity, physical: true }],
      });
      return insertAdjustment(trx, auth.accountId, {
        id, item_id: body.itemId, location_id: body.locationId, quantity: body.quantity, reason: body.reason, created_by: auth.userId,
      }, applied!.level);
    }))),
  }),
  adjustments.list,
  adjustments.get,

  defineRoute({
    method: 'post', path: '/stock-transfers', operationId: 'createStockTransfer', tag,
    summary: 'Transfer stock between locations',
    description: 'Moves stock of one item from one location to another: two movements in one transaction, or neither.',
    body: CreateStockTransfer,
    resolve: checkReferences([
      { table: 'items', field: 'itemId' },
      { table: 'locations', field: 'fromLocationId' },
      { table: 'locations', field: 'toLocationId' },
    ]),
    success: { status: 201, description: 'The transfer, with the levels it left', schema: StockTransfer },
    errors: { 409: insufficient },
    handler: async ({ db, auth, body }) => created(toTransfer(await db.transaction(async (trx) => {
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
        quantity: body.quantity, reason: body.reason ?? null, created_by: auth.userId,
      }, { from: from!.level, to: to!.level });
    }))),
  }),
  transfers.list,
  transfers.get,
];
