// A route is one object: method, path, schemas and handler. The router mounts it and openapi.ts documents
// it, so what the API validates and what the document says come from the same structs.
import type Router from '@koa/router';
import { validate } from 'superstruct';
import type { Db } from '../../db/knex.ts';
import type { ApiKeyIdentity } from '../../shared/accounts.ts';
import type { AppContext, AppState } from './context.ts';
import { ValidationError, problemsOf, type Problem } from './errors.ts';
import { missingReferences, referencesIn, type ReferenceField } from './references.ts';
import { object, type AnyStruct, type Struct } from './schema.ts';

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface RouteInput<Q, B> {
  query: Q;
  body: B;
  params: Record<string, string>;
  auth: ApiKeyIdentity;
  db: Db;
  ctx: AppContext;
}

export interface RouteSpec<Q, B> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI form, relative to the API prefix: `/items/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  query?: Struct<Q, any>;
  body?: Struct<B, any>;
  /** Records the body names, checked to belong to the account alongside the shape: one 400 names every problem. */
  references?: ReferenceField[];
  success: { status: 200 | 201; description: string; schema: AnyStruct; list?: boolean };
  /** Statuses this route answers beyond those every authenticated route may answer, with why. */
  errors?: Partial<Record<404 | 409, string>>;
  handler: (input: RouteInput<Q, B>) => Promise<Reply>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any>;

export function defineRoute<Q = Record<string, never>, B = undefined>(spec: RouteSpec<Q, B>): RouteSpec<Q, B> {
  return spec;
}

export const ok = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, headers });
export const created = (body: unknown): Reply => ({ status: 201, body });

const NO_QUERY = object({});

function check<T>(struct: Struct<T, unknown>, value: unknown, root: string, problems: Problem[]): T {
  // superstruct would walk an array's indexes as if they were fields.
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push({ path: root, message: 'must be an object' });
    return value as T;
  }
  const [error, result] = validate(value, struct, { coerce: true });
  if (error) problems.push(...problemsOf(error, root));
  return result as T;
}

function koaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function mountRoutes(router: Router<AppState>, routes: AnyRoute[], db: Db): void {
  for (const spec of routes) {
    router[spec.method](spec.operationId, koaPath(spec.path), async (ctx) => {
      const problems: Problem[] = [];
      const query = check(spec.query ?? NO_QUERY, { ...ctx.query }, 'query', problems);
      const body = spec.body ? check(spec.body, ctx.request.body ?? {}, 'body', problems) : undefined;
      const auth = ctx.state.auth;
      if (!auth) throw new Error('mountRoutes: route reached without authentication');
      if (spec.references) problems.push(...await missingReferences(db, auth.accountId, referencesIn(ctx.request.body, spec.references)));
      if (problems.length) throw new ValidationError(problems);
      const reply = await spec.handler({ query, body, params: ctx.params, auth, db, ctx: ctx as AppContext });
      ctx.status = reply.status;
      ctx.body = reply.body;
      for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
    });
  }
}
