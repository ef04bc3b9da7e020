// The list / get / create / update routes that plain account-owned resources share.
import type { Knex } from 'knex';
import { recordEvent, type EventType } from '../shared/events.ts';
import type { OwnedRow } from './crud.ts';
import { NotFoundError } from './errors.ts';
import { listOf, pageReply, pageRequest, type PageRequest } from './pagination.ts';
import { created, defineRoute, ok, type AnyRoute } from './route.ts';
import type { AnyStruct, Struct } from './schema.ts';

export interface ResourceDefinition<Row extends OwnedRow, Rec, Create, Update, Query> {
  /** Singular, capitalised: "Location". */
  name: string;
  /** Collection path: "/locations". */
  path: string;
  tag: string;
  record: AnyStruct;
  createBody: Struct<Create, any>;
  updateBody: Struct<Update, any>;
  listQuery: Struct<Query, any>;
  toRecord: (row: Row) => Rec;
  find: (db: Knex, accountId: string, id: string) => Promise<Row | undefined>;
  insert: (db: Knex, accountId: string, input: Create) => Promise<Row>;
  update: (db: Knex, accountId: string, id: string, patch: Update) => Promise<Row | undefined>;
  list: (db: Knex, accountId: string, filters: Query, page: PageRequest) => Promise<Row[]>;
  /** Why a create or update can conflict, when it can. */
  conflict?: string;
  /** Events recorded, in the same transaction, when a record is created or changed. */
  events?: { created: EventType; updated: EventType };
}

export function resourceRoutes<Row extends OwnedRow, Rec, Create, Update, Query>(
  resource: ResourceDefinition<Row, Rec, Create, Update, Query>,
): { list: AnyRoute; get: AnyRoute; create: AnyRoute; update: AnyRoute } {
  const { name, path, tag, toRecord } = resource;
  const lower = name.toLowerCase();
  const article = /^[aeiou]/.test(lower) ? 'an' : 'a';
  const notFound = { 404: `No such ${lower} in this account` };
  const conflict = resource.conflict ? { 409: resource.conflict } : {};
  const find = async (db: Knex, accountId: string, id: string) => {
    const row = await resource.find(db, accountId, id);
    if (!row) throw new NotFoundError(name);
    return row;
  };

  return {
    list: defineRoute({
      method: 'get', path, operationId: `list${name}s`, tag,
      summary: `List ${lower}s`,
      query: resource.listQuery,
      success: { status: 200, description: `A page of ${lower}s`, schema: listOf(name, resource.record), list: true },
      handler: async ({ db, auth, query, ctx }) => {
        const page = pageRequest(query as Query & object);
        return pageReply(ctx, page, await resource.list(db, auth.accountId, query, page), toRecord);
      },
    }),
    get: defineRoute({
      method: 'get', path: `${path}/{id}`, operationId: `get${name}`, tag,
      summary: `Get ${article} ${lower}`,
      success: { status: 200, description: `The ${lower}`, schema: resource.record },
      errors: notFound,
      handler: async ({ db, auth, params }) => ok(toRecord(await find(db, auth.accountId, params.id ?? ''))),
    }),
    create: defineRoute({
      method: 'post', path, operationId: `create${name}`, tag,
      summary: `Create ${article} ${lower}`,
      body: resource.createBody,
      success: { status: 201, description: `The created ${lower}`, schema: resource.record },
      errors: conflict,
      handler: async ({ db, auth, body }) => created(await db.transaction(async (trx) => {
        const record = toRecord(await resource.insert(trx, auth.accountId, body));
        if (resource.events) await recordEvent(trx, auth.accountId, { type: resource.events.created, data: record });
        return record;
      })),
    }),
    update: defineRoute({
      method: 'patch', path: `${path}/{id}`, operationId: `update${name}`, tag,
      summary: `Update ${article} ${lower}`,
      description: 'Only the fields sent change.',
      body: resource.updateBody,
      success: { status: 200, description: `The updated ${lower}`, schema: resource.record },
      errors: { ...notFound, ...conflict },
      handler: async ({ db, auth, params, body }) => ok(await db.transaction(async (trx) => {
        const row = await resource.update(trx, auth.accountId, params.id ?? '', body);
        if (!row) throw new NotFoundError(name);
        const record = toRecord(row);
        const changed = Object.values(body as object).some((value) => value !== undefined);
        if (resource.events && changed) await recordEvent(trx, auth.accountId, { type: resource.events.updated, data: record });
        return record;
      })),
    }),
  };
}
