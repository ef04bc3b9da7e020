import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { checkReferences, resolveItemRows, type ItemRef } from '../../framework/references.ts';
import { listRoute, readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute } from '../../framework/route.ts';
import { applyStock, OVERFLOW_CONFLICT, SHORTAGE_CONFLICT, toMovement } from '../../../db/stock.ts';
import {
  findAdjustment, findTransfer, adjustmentCtes, transferCtes, listAdjustments, listStockLevels, listStockMovements,
  listTransfers, toAdjustment, toStockLevel, toTransfer, type AdjustmentRow, type TransferRow,
} from './queries.ts';
import {
  CreateStockAdjustment, CreateStockAdjustmentBatch, CreateStockTransfer, MAX_BATCH_ROWS, StockAdjustmentBatch, StockAdjustment, StockAdjustmentListQuery, StockLevel, StockLevelListQuery,
  StockMovement, StockMovementListQuery, StockTransfer, StockTransferListQuery,
} from './schema.ts';

const tag = 'Stock';
const insufficient = `${SHORTAGE_CONFLICT} ${OVERFLOW_CONFLICT}`;
const checkBatchLocations = checkReferences([{ table: 'locations', field: 'adjustments[].locationId' }]);

/**
 * Adjustments in order, as one move (one movement each, a physical change: it may take reserved stock) and their
 * records, each with the level it left (the level after the whole move, less what later rows of that level
 * added), in one statement; it checks the items and locations are the account's when no lookup did (`checked`).
 */
async function adjust(db: Knex, auth: ApiKeyIdentity, rows: CreateStockAdjustment[], checked = false): Promise<AdjustmentRow[]> {
  const ids = rows.map(() => randomUUID());
  const { row } = await applyStock<{ adjustments: AdjustmentRow[] }>(db, {
    accountId: auth.accountId, userId: auth.userId,
    move: {
      type: 'adjustment', reason: null, source: { type: 'stock_adjustment', id: ids[0]! },
      changes: rows.map((row, index) => ({
        itemId: row.itemId, locationId: row.locationId, quantity: row.quantity, physical: true, reason: row.reason,
        source: { type: 'stock_adjustment' as const, id: ids[index]! },
      })),
    },
  }, { checkReferences: !checked, extend: (q) => adjustmentCtes(q, auth, ids, rows) });
  return row.adjustments;
}

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
    resolveOnRefusal: true,
    handler: async ({ db, auth, body }) => created(toAdjustment((await adjust(db, auth, [body]))[0]!)),
  }),
  defineRoute<Record<string, never>, CreateStockAdjustmentBatch, Array<ItemRef | undefined>>({
    method: 'post', path: '/stock-adjustments/batch', operationId: 'createStockAdjustmentBatch', tag,
    summary: 'Adjust stock in bulk',
    description: `1 to ${MAX_BATCH_ROWS} adjustments (items by \`itemId\` or \`sku\`) in one transaction: all or none. They apply in order, `
      + 'so several may change one level (each answers the level it left after the rows before it), and no step may take a level '
      + 'below zero: a shortfall anywhere is one 409 naming every short level. One movement and one `stock.adjusted` event per row. '
      + 'Set-based: the statements do not grow with the rows. Counts as one request against the rate limit.',
    body: CreateStockAdjustmentBatch,
    resolve: async ({ db, auth, body }) => {
      const [locations, { problems, items }] = await Promise.all([
        checkBatchLocations({ db, auth, body }), resolveItemRows(db, auth.accountId, body, 'adjustments'),
      ]);
      return { problems: [...locations.problems, ...problems], resolved: items };
    },
    success: { status: 201, description: 'The adjustments, in the order sent', schema: StockAdjustmentBatch },
    errors: { 409: insufficient },
    handler: async ({ db, auth, body, resolved }) => created({
      data: (await adjust(db, auth, body.adjustments.map((row, index) => ({ ...row, itemId: resolved[index]!.id })), true)).map(toAdjustment),
    }),
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
    resolveOnRefusal: true,
    handler: async ({ db, auth, body }) => {
      const id = randomUUID();
      const { row } = await applyStock<{ transfer: TransferRow }>(db, {
        accountId: auth.accountId, userId: auth.userId,
        move: {
          type: 'transfer', reason: body.reason ?? null, source: { type: 'stock_transfer', id },
          changes: [
            { itemId: body.itemId, locationId: body.fromLocationId, quantity: -body.quantity },
            { itemId: body.itemId, locationId: body.toLocationId, quantity: body.quantity },
          ],
        },
      }, { checkReferences: true, extend: (q) => transferCtes(q, auth, id, body) });
      return created(toTransfer(row.transfer));
    },
  }),
  transfers.list,
  transfers.get,
];
