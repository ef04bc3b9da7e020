import { randomUUID } from 'node:crypto';
import { readRoutes } from '../../framework/resource-routes.ts';
import { checkReferences } from '../../framework/references.ts';
import { created, defineRoute } from '../../framework/route.ts';
import { applyStock, OVERFLOW_CONFLICT, SHORTAGE_CONFLICT } from '../../../db/stock.ts';
import { findProductionRecord, listProductionRecords, productionRecordCtes, toProductionRecord } from './queries.ts';
import { CreateProductionRecord, ProductionRecord, ProductionRecordListQuery } from './schema.ts';

const tag = 'Production records';

const productionRecords = readRoutes({
  path: '/production-records', tag, noun: 'production record', record: ProductionRecord, query: ProductionRecordListQuery,
  list: listProductionRecords, find: findProductionRecord, toRecord: toProductionRecord,
  listDescription: 'Each record with its components.',
});

export const productionRecordRoutes = [
  defineRoute({
    method: 'post', path: '/production-records', operationId: 'createProductionRecord', tag,
    summary: 'Record production',
    description: 'Adds `quantity` of `itemId` at `locationId` and consumes every component there, in one transaction: '
      + 'stock movements of type `production` whose source is the record, each with its `stock.adjusted` event, '
      + 'and a `production_record.created` event.',
    body: CreateProductionRecord,
    resolve: checkReferences([
      { table: 'items', field: 'itemId', active: true },
      { table: 'locations', field: 'locationId' },
      { table: 'items', field: 'components[].itemId', active: true },
    ]),
    success: { status: 201, description: 'The production record', schema: ProductionRecord },
    errors: {
      409: `A component is short at the location (components take only what is available, not what is reserved). ${SHORTAGE_CONFLICT} ${OVERFLOW_CONFLICT}`,
    },
    handler: async ({ db, auth, body }) => {
      const id = randomUUID();
      const now = randomUUID();
      const record: ProductionRecord = {
        id, itemId: body.itemId, locationId: body.locationId, quantity: body.quantity, components: body.components,
        reference: body.reference ?? null, createdBy: auth.userId, createdAt: now, updatedAt: now,
      };
      const { row } = await applyStock<{ record: ProductionRecord }>(db, {
        accountId: auth.accountId, userId: auth.userId,
        move: {
          type: 'production', reason: 'Production', source: { type: 'production_record', id },
          changes: [
            { itemId: body.itemId, locationId: body.locationId, quantity: body.quantity },
            ...body.components.map((component) => ({ itemId: component.itemId, locationId: body.locationId, quantity: -component.quantity })),
          ],
        },
      }, { extend: (q) => productionRecordCtes(q, auth.accountId, { ...body, id, createdBy: auth.userId }, record, now) });
      return created(row.record);
    },
  }),

  productionRecords.list,
  productionRecords.get,
];
