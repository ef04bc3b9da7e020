// A route is one object: method, path, schemas and handler. The router mounts it and openapi.ts documents
// it, so what the API validates and what the document says come from the same structs.
import type Router from '@koa/router';
import { validate } from 'superstruct';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../db/accounts.ts';
import { isRecord } from '../../shared/guards.ts';
import type { Config } from '../../shared/config.ts';
import type { ResolveHost } from '../../shared/webhook-urls.ts';
import type { AppContext, AppState } from './context.ts';
import { formatPath, MAX_PROBLEMS, UnresolvedReferences, ValidationError, type Problem } from '../../shared/errors.ts';
import { problemsOf } from './errors.ts';
import { object, volumeProblems, type AnyStruct, type Struct } from './schema.ts';

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /**
   * What a retry with the same Idempotency-Key is answered instead of `body`, when the body holds something that
   * is shown only once (a secret): kept for 24 hours, it must not hold that.
   */
  replay?: unknown;
}

/** What handlers may use besides the request: passed in by createApp, so tests hand in their own. */
export interface RouteDeps {
  db: Knex;
  config: Config;
  resolveHost: ResolveHost;
}

export interface RouteInput<Q, B, R = undefined> extends RouteDeps {
  query: Q;
  body: B;
  /** What the route's `resolve` found. */
  resolved: R;
  params: Record<string, string>;
  auth: ApiKeyIdentity;
  ctx: AppContext;
}

export interface Resolution<R> {
  problems: Problem[];
  resolved: R;
}

export interface RouteSpec<Q, B, R = undefined> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI form, relative to the API prefix: `/items/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  /** What an integrator needs beyond the summary; standard linters ask every operation for one. */
  description: string;
  tag: string;
  query?: Struct<Q, any>;
  body?: Struct<B, any>;
  /** The schema of the body; none for a 204. */
  success: { status: 200 | 201 | 202 | 204; description: string; schema?: AnyStruct; list?: boolean };
  /** Statuses this route answers beyond those every authenticated route may answer, with why. */
  errors?: Partial<Record<404 | 409 | 410, string>>;
  /**
   * Looks up what the body refers to (records of the account, by id or by another key). It runs on the body as
   * sent, also when the body failed its struct, so that one 400 names the shape and the reference problems
   * together; a path the struct already named is not named twice. What it found reaches the handler as `resolved`.
   */
  resolve?: (input: RouteDeps & { body: unknown; auth: ApiKeyIdentity; params: Record<string, string> }) => Promise<Resolution<R>>;
  /**
   * The handler's own statement checks what `resolve` looks up (throwing UnresolvedReferences when a record is not
   * the account's), so that a valid request costs no lookup of its own: `resolve` then runs only beside a body's
   * shape problems, or to name what the handler found missing.
   */
  resolveOnRefusal?: boolean;
  handler: (input: RouteInput<Q, B, R>) => Promise<Reply>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

export function defineRoute<Q = Record<string, never>, B = undefined, R = undefined>(spec: RouteSpec<Q, B, R>): RouteSpec<Q, B, R> {
  return spec;
}

export const ok = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, headers });
export const created = (body: unknown): Reply => ({ status: 201, body });
export const accepted = (body: unknown): Reply => ({ status: 202, body });
export const noContent = (): Reply => ({ status: 204, body: null });

const NO_QUERY = object({});

function check<T>(struct: Struct<T, unknown>, value: unknown, root: string, problems: Problem[]): T {
  // superstruct would walk an array's indexes as if they were fields.
  if (!isRecord(value)) {
    problems.push({ path: root, message: 'must be an object' });
    return value as T;
  }
  // A value too big to validate is refused as it is: nothing more is checked or looked up for it.
  const oversized = volumeProblems(struct, value, MAX_PROBLEMS);
  if (oversized.length) throw new ValidationError(oversized.map((problem) => ({ path: formatPath(problem.path) || root, message: problem.message })));
  const [error, result] = validate(value, struct, { coerce: true });
  if (error) for (const problem of problemsOf(error, root)) problems.push(problem);
  return result as T;
}

/** A route without a body schema takes none: anything but nothing or `{}` is refused rather than ignored. */
function refuseBody(sent: unknown, problems: Problem[]): undefined {
  const empty = isRecord(sent) && Object.keys(sent).length === 0;
  if (!empty) problems.push({ path: 'body', message: 'must be empty: this operation takes no body' });
  return undefined;
}

function koaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function mountRoutes(router: Router<AppState>, routes: AnyRoute[], deps: RouteDeps): void {
  for (const spec of routes) {
    router[spec.method](spec.operationId, koaPath(spec.path), async (ctx) => {
      const auth = ctx.state.auth;
      if (!auth) throw new Error('mountRoutes: route reached without authentication');
      const problems: Problem[] = [];
      const query = check(spec.query ?? NO_QUERY, { ...ctx.query }, 'query', problems);
      const sent: unknown = ctx.request.body ?? {};
      const body = spec.body ? check(spec.body, sent, 'body', problems) : refuseBody(sent, problems);
      const resolve = async () => {
        const found = await spec.resolve!({ ...deps, body: sent, auth, params: ctx.params });
        const named = new Set(problems.map((problem) => problem.path));
        for (const problem of found.problems) if (!named.has(problem.path)) problems.push(problem);
        return found;
      };
      const found = spec.resolve && (!spec.resolveOnRefusal || problems.length) ? await resolve() : undefined;
      if (problems.length) throw new ValidationError(problems);
      const reply = await spec.handler({ ...deps, query, body, resolved: found?.resolved, params: ctx.params, auth, ctx: ctx as AppContext })
        .catch(async (error: unknown) => {
          if (!(error instanceof UnresolvedReferences) || !spec.resolve) throw error;
          await resolve();
          throw problems.length ? new ValidationError(problems) : error;
        });
      ctx.status = reply.status;
      ctx.body = reply.body;
      if (reply.replay !== undefined) ctx.state.replayBody = reply.replay;
      for (const [name, value] of Object.entries(reply.headers ?? {})) ctx.set(name, value);
    });
  }
}
