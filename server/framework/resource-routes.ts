// Route builders shared by the resources: the paged list and the get by id every resource has, and for plain
// account-owned records the whole list / get / create / update set. Operation ids come from the record's schema
// name (`StockAdjustment`: `listStockAdjustments`, `getStockAdjustment`, its list `StockAdjustmentList`); prose
// (summaries, the 404) from the noun (`stock adjustment`).
import type { Knex } from 'knex';
import { recordEvent } from '../../db/events.ts';
import type { EventType } from '../../shared/events.ts';
import { findOwned, type OwnedRow } from './crud.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { listOf, listQuery, pageReply, pageRequest, withRememberedStart, type PageRequest } from './pagination.ts';
import { created, defineRoute, ok, type AnyRoute } from './route.ts';
import { metaOf, type AnyStruct, type Struct } from './schema.ts';

interface ReadSpec<Row extends OwnedRow, Rec, Query> {
  /** The collection: `/stock-adjustments`; one record is at `<path>/{id}`. */
  path: string;
  tag: string;
  /** One record in prose, lower case: `stock adjustment`. */
  noun: string;
  /** The record's named schema. */
  record: AnyStruct;
  query: Struct<Query, any>;
  list: (db: Knex, accountId: string, filters: Query, page: PageRequest) => Promise<Row[]>;
  find: (db: Knex, accountId: string, id: string) => Promise<Row | undefined>;
  toRecord: (row: Row) => Rec;
  /** Replaces the list's standard description. */
  listDescription?: string;
  /** Logs list newest first. */
  newestFirst?: boolean;
}

const article = (noun: string) => (/^[aeiou]/.test(noun) ? 'an' : 'a');
const capitalised = (noun: string) => noun.charAt(0).toUpperCase() + noun.slice(1);

/** The record's schema name, which operation ids are made of. */
export function recordName(record: AnyStruct): string {
  const { name } = metaOf(record);
  if (!name) throw new Error('resource routes need a named record schema');
  return name;
}

export function listRoute<Row extends OwnedRow, Rec, Query>(spec: Omit<ReadSpec<Row, Rec, Query>, 'find'>): AnyRoute {
  return defineRoute({
    method: 'get', path: spec.path, operationId: `list${recordName(spec.record)}s`, tag: spec.tag,
    summary: `List ${spec.noun}s`,
    description: spec.listDescription ?? `Your account's records, ${spec.newestFirst ? 'newest' : 'oldest'} first, a page at a time: follow the \`Link\` header, or pass \`updatedSince\` to sync what changed.`,
    query: spec.query,
    success: { status: 200, description: 'A page of records', schema: listOf(spec.record), list: true },
    handler: async ({ db, auth, query, ctx, config }) => {
      const page = withRememberedStart(ctx, pageRequest(query as Query & object, { descending: spec.newestFirst }));
      return pageReply(ctx, page, await spec.list(db, auth.accountId, query, page), spec.toRecord, config.publicUrl);
    },
  });
}

export function getRoute<Row extends OwnedRow, Rec>(spec: Pick<ReadSpec<Row, Rec, unknown>, 'path' | 'tag' | 'noun' | 'record' | 'find' | 'toRecord'>): AnyRoute {
  return defineRoute({
    method: 'get', path: `${spec.path}/{id}`, operationId: `get${recordName(spec.record)}`, tag: spec.tag,
    summary: `Get ${article(spec.noun)} ${spec.noun}`,
    description: `One ${spec.noun} of your account, by id. Another account's record is a 404, as a missing one.`,
    success: { status: 200, description: `The ${spec.noun}`, schema: spec.record },
    errors: { 404: `No such ${spec.noun} in this account` },
    handler: async ({ db, auth, params }) => {
      const row = await spec.find(db, auth.accountId, params.id ?? '');
      if (!row) throw new NotFoundError(capitalised(spec.noun));
      return ok(spec.toRecord(row));
    },
  });
}

/** The records of one parent record (`/sales-orders/{id}/fulfillments`), oldest first; a missing parent is a 404. */
export function childListRoute<Row extends OwnedRow, Rec>(spec: Pick<ReadSpec<Row, Rec, unknown>, 'path' | 'tag' | 'noun' | 'record' | 'toRecord'> & {
  parent: { table: string; noun: string };
  list: (db: Knex, accountId: string, parentId: string, page: PageRequest) => Promise<Row[]>;
  description: string;
}): AnyRoute {
  return defineRoute({
    method: 'get', path: spec.path, operationId: `list${recordName(spec.record)}s`, tag: spec.tag,
    summary: `List ${article(spec.parent.noun)} ${spec.parent.noun}'s ${spec.noun}s`,
    description: spec.description,
    query: listQuery({}),
    success: { status: 200, description: `A page of ${spec.noun}s`, schema: listOf(spec.record), list: true },
    errors: { 404: `No such ${spec.parent.noun} in this account` },
    handler: async ({ db, auth, params, query, ctx, config }) => {
      const parent = await findOwned(db, spec.parent.table, auth.accountId, params.id ?? '');
      if (!parent) throw new NotFoundError(capitalised(spec.parent.noun));
      const page = withRememberedStart(ctx, pageRequest(query));
      return pageReply(ctx, page, await spec.list(db, auth.accountId, parent.id, page), spec.toRecord, config.publicUrl);
    },
  });
}

/** The list and the get by id of a resource. */
export function readRoutes<Row extends OwnedRow, Rec, Query>(spec: ReadSpec<Row, Rec, Query>): { list: AnyRoute; get: AnyRoute } {
  return { list: listRoute(spec), get: getRoute(spec) };
}

export interface ResourceDefinition<Row extends OwnedRow, Rec, Create, Update, Query> extends ReadSpec<Row, Rec, Query> {
  createBody: Struct<Create, any>;
  updateBody: Struct<Update, any>;
  insert: (db: Knex, accountId: string, input: Create) => Promise<Row>;
  update: (db: Knex, accountId: string, id: string, patch: Update) => Promise<Row | undefined>;
  /** Why a create or update can conflict, when it can. */
  conflict?: string;
  /** Events recorded, in the same transaction, when a record is created or changed. */
  events?: { created: EventType; updated: EventType };
}

export function resourceRoutes<Row extends OwnedRow, Rec, Create, Update, Query>(
  resource: ResourceDefinition<Row, Rec, Create, Update, Query>,
): { list: AnyRoute; get: AnyRoute; create: AnyRoute; update: AnyRoute } {
  const { noun, path, tag, toRecord } = resource;
  const name = recordName(resource.record);
  const conflict = resource.conflict ? { 409: resource.conflict } : {};

  return {
    ...readRoutes(resource),
    create: defineRoute({
      method: 'post', path, operationId: `create${name}`, tag,
      summary: `Create ${article(noun)} ${noun}`,
      description: `Answers the ${noun} as stored, with its id.${resource.conflict ? ` A 409 when ${resource.conflict.charAt(0).toLowerCase()}${resource.conflict.slice(1)}.` : ''}`,
      body: resource.createBody,
      success: { status: 201, description: `The created ${noun}`, schema: resource.record },
      errors: conflict,
      handler: async ({ db, auth, body }) => created(await db.transaction(async (trx) => {
        const record = toRecord(await resource.insert(trx, auth.accountId, body));
        if (resource.events) await recordEvent(trx, auth.accountId, { type: resource.events.created, data: record });
        return record;
      })),
    }),
    update: defineRoute({
      method: 'patch', path: `${path}/{id}`, operationId: `update${name}`, tag,
      summary: `Update ${article(noun)} ${noun}`,
      description: 'Only the fields sent change.',
      body: resource.updateBody,
      success: { status: 200, description: `The updated ${noun}`, schema: resource.record },
      errors: { 404: `No such ${noun} in this account`, ...conflict },
      handler: async ({ db, auth, params, body }) => ok(await db.transaction(async (trx) => {
        const row = await resource.update(trx, auth.accountId, params.id ?? '', body);
        if (!row) throw new NotFoundError(capitalised(noun));
        const record = toRecord(row);
        const changed = Object.values(body as object).some((value) => value !== undefined);
        if (resource.events && changed) await recordEvent(trx, auth.accountId, { type: resource.events.updated, data: record });
        return record;
      })),
    }),
  };
}
