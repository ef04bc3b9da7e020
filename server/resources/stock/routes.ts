import { randomUUID } from 'node:crypto';
import { NotFoundError, ValidationError } from '../../errors.ts';
import { listOf, pageReply, pageRequest } from '../../pagination.ts';
import { requireReferences } from '../../references.ts';
import { created, defineRoute, ok } from '../../route.ts';
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
const insufficient = 'The change would take a stock level below zero; nothing was written. The body gives `itemId`, `locationId`, `available` and `requested`.';

export const stockRoutes = [
  defineRoute({
    method: 'get', path: '/stock-levels', operationId: 'listStockLevels', tag,
    summary: 'List stock levels',
    description: 'One entry per item and location that ever held stock.',
    query: StockLevelListQuery,
    success: { status: 200, description: 'A page of stock levels', schema: listOf('StockLevel', StockLevel), list: true },
    handler: async ({ db, auth, query, ctx }) => {
      const page = pageRequest(query);
      return pageReply(ctx, page, await listStockLevels(db, auth.accountId, query, page), toStockLevel);
    },
  }),

  defineRoute({
    method: 'get', path: '/stock-movements', operationId: 'listStockMovements', tag,
    summary: 'List stock movements (the ledger)',
    description: 'Every change of stock, whatever caused it, oldest first. Movements never change.',
    query: StockMovementListQuery,
    success: { status: 200, description: 'A page of movements', schema: listOf('StockMovement', StockMovement), list: true },
    handler: async ({ db, auth, query, ctx }) => {
      const page = pageRequest(query);
      return pageReply(ctx, page, await listStockMovements(db, auth.accountId, query, page), toMovement);
    },
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

  defineRoute({
    method: 'get', path: '/stock-adjustments', operationId: 'listStockAdjustments', tag,
    summary: 'List stock adjustments',
    query: StockAdjustmentListQuery,
    success: { status: 200, description: 'A page of adjustments', schema: listOf('StockAdjustment', StockAdjustment), list: true },
    handler: async ({ db, auth, query, ctx }) => {
      const page = pageRequest(query);
      return pageReply(ctx, page, await listAdjustments(db, auth.accountId, query, page), toAdjustment);
    },
  }),

  defineRoute({
    method: 'get', path: '/stock-adjustments/{id}', operationId: 'getStockAdjustment', tag,
    summary: 'Get a stock adjustment',
    success: { status: 200, description: 'The adjustment', schema: StockAdjustment },
    errors: { 404: 'No such stock adjustment in this account' },
    handler: async ({ db, auth, params }) => {
      const row = await findAdjustment(db, auth.accountId, params.id ?? '');
      if (!row) throw new NotFoundError('Stock adjustment');
      return ok(toAdjustment(row));
    },
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

  defineRoute({
    method: 'get', path: '/stock-transfers', operationId: 'listStockTransfers', tag,
    summary: 'List stock transfers',
    query: StockTransferListQuery,
    success: { status: 200, description: 'A page of transfers', schema: listOf('StockTransfer', StockTransfer), list: true },
    handler: async ({ db, auth, query, ctx }) => {
      const page = pageRequest(query);
      return pageReply(ctx, page, await listTransfers(db, auth.accountId, query, page), toTransfer);
    },
  }),

  defineRoute({
    method: 'get', path: '/stock-transfers/{id}', operationId: 'getStockTransfer', tag,
    summary: 'Get a stock transfer',
    success: { status: 200, description: 'The transfer', schema: StockTransfer },
    errors: { 404: 'No such stock transfer in this account' },
    handler: async ({ db, auth, params }) => {
      const row = await findTransfer(db, auth.accountId, params.id ?? '');
      if (!row) throw new NotFoundError('Stock transfer');
      return ok(toTransfer(row));
    },
  }),
];
