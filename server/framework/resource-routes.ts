// Route builders shared by the resources: a paged list, a get by id, and for plain account-owned records the
// whole list / get / create / update set.
import type { Knex } from 'knex';
import { recordEvent } from '../../db/events.ts';
import { type EventType } from '../../shared/events.ts';
import type { OwnedRow } from './crud.ts';
import { NotFoundError } from './errors.ts';
import { listOf, pageReply, pageRequest, withRememberedStart, type PageRequest } from './pagination.ts';
import { created, defineRoute, ok, type AnyRoute } from './route.ts';
import type { AnyStruct, Struct } from './schema.ts';

interface ListRouteSpec<Row extends OwnedRow, Rec, Query> {
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** Names the `<Name>List` schema of the response. */
  name: string;
  record: AnyStruct;
  query: Struct<Query, any>;
  list: (db: Knex, accountId: string, filters: Query, page: PageRequest) => Promise<Row[]>;
  toRecord: (row: Row) => Rec;
  /** Logs list newest first. */
  newestFirst?: boolean;
}

export function listRoute<Row extends OwnedRow, Rec, Query>(spec: ListRouteSpec<Row, Rec, Query>): AnyRoute {
  return defineRoute({
    method: 'get', path: spec.path, operationId: spec.operationId, tag: spec.tag,
    summary: spec.summary,
    description: spec.description ?? `Your account's records, ${spec.newestFirst ? 'newest' : 'oldest'} first, a page at a time: follow the \`Link\` header, or pass \`updatedSince\` to sync what changed.`,
    query: spec.query,
    success: { status: 200, description: 'A page of records', schema: listOf(spec.name, spec.record), list: true },
    handler: async ({ db, auth, query, ctx }) => {
      const page = withRememberedStart(ctx, pageRequest(query as Query & object, { descending: spec.newestFirst }));
      return pageReply(ctx, page, await spec.list(db, auth.accountId, query, page), spec.toRecord);
    },
  });
}

interface GetRouteSpec<Row, Rec> {
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  /** As the 404 names it: "Stock adjustment". */
  name: string;
  record: AnyStruct;
  find: (db: Knex, accountId: string, id: string) => Promise<Row | undefined>;
  toRecord: (row: Row) => Rec;
}

export function getRoute<Row, Rec>(spec: GetRouteSpec<Row, Rec>): AnyRoute {
  return defineRoute({
    method: 'get', path: spec.path, operationId: spec.operationId, tag: spec.tag,
    summary: spec.summary,
    description: `One ${spec.name.toLowerCase()} of your account, by id. Another account's record is a 404, as a missing one.`,
    success: { status: 200, description: `The ${spec.name.toLowerCase()}`, schema: spec.record },
    errors: { 404: `No such ${spec.name.toLowerCase()} in this account` },
    handler: async ({ db, auth, params }) => {
      const row = await spec.find(db, auth.accountId, params.id ?? '');
      if (!row) throw new NotFoundError(spec.name);
      return ok(spec.toRecord(row));
    },
  });
}

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
  const conflict = resource.conflict ? { 409: resource.conflict } : {};

  return {
    list: listRoute({ ...resource, operationId: `list${name}s`, summary: `List ${lower}s`, query: resource.listQuery }),
    get: getRoute({ ...resource, path: `${path}/{id}`, operationId: `get${name}`, summary: `Get ${article} ${lower}` }),
    create: defineRoute({
      method: 'post', path, operationId: `create${name}`, tag,
      summary: `Create ${article} ${lower}`,
      description: `Answers the ${lower} as stored, with its id.${resource.conflict ? ` A 409 when ${resource.conflict.charAt(0).toLowerCase()}${resource.conflict.slice(1)}.` : ''}`,
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
      errors: { 404: `No such ${lower} in this account`, ...conflict },
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
