// The OpenAPI 3.1 document, generated from the route table and the structs the routes validate with.
import { IDEMPOTENCY_HEADER, KEY_LIFETIME_HOURS, MAX_KEY_LENGTH, REPLAYED_HEADER } from '../middleware/idempotency.ts';
import type { AnyRoute } from './route.ts';
import { metaOf, type AnyStruct, type JsonSchema } from './schema.ts';

type Components = Record<string, JsonSchema>;

function compact(schema: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(schema).filter(([, value]) => value !== undefined));
}

function nullableOf(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string') {
    const withNull = { ...schema, type: [schema.type, 'null'] };
    return Array.isArray(schema.enum) ? { ...withNull, enum: [...schema.enum, null] } : withNull;
  }
  return { anyOf: [schema, { type: 'null' }] };
}

function objectSchema(struct: AnyStruct, components: Components): JsonSchema {
  const shape = (struct.schema ?? {}) as Record<string, AnyStruct>;
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [key, field] of Object.entries(shape)) {
    properties[key] = toJsonSchema(field, components);
    if (!metaOf(field).optional) required.push(key);
  }
  return compact({
    type: 'object',
    properties,
    required: required.length ? required : undefined,
    additionalProperties: struct.type === 'object' ? false : undefined,
  });
}

function baseSchema(struct: AnyStruct, components: Components): JsonSchema {
  switch (struct.type) {
    case 'object':
    case 'type':
      return objectSchema(struct, components);
    case 'array':
      return { type: 'array', items: struct.schema ? toJsonSchema(struct.schema as AnyStruct, components) : {} };
    case 'enums':
      return { type: 'string', enum: Object.values(struct.schema as object) };
    case 'literal':
      return { const: struct.schema };
    case 'union':
      return { anyOf: (struct.schema as AnyStruct[]).map((member) => toJsonSchema(member, components)) };
    case 'oneOf':
      return { oneOf: (struct.schema as AnyStruct[]).map((member) => toJsonSchema(member, components)) };
    case 'date':
      return { type: 'string', format: 'date-time' };
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean':
      return { type: struct.type };
    default:
      return {};
  }
}

function unnamedSchema(struct: AnyStruct, components: Components): JsonSchema {
  const meta = metaOf(struct);
  if (meta.inner) {
    const inner = toJsonSchema(meta.inner, components);
    if (meta.nullable) return nullableOf(inner);
    return meta.default === undefined ? inner : { ...inner, default: meta.default };
  }
  return compact({ ...baseSchema(struct, components), ...meta.schema });
}

/** A struct as JSON Schema; named structs are added to `components` once and referred to with $ref. */
export function toJsonSchema(struct: AnyStruct, components: Components): JsonSchema {
  const { name } = metaOf(struct);
  if (!name) return unnamedSchema(struct, components);
  if (!components[name]) {
    components[name] = {}; // reserve the name first: a schema may refer to itself
    components[name] = unnamedSchema(struct, components);
  }
  return { $ref: `#/components/schemas/${name}` };
}

const errorBody = (example: string) => ({
  'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: example } },
});

const RESPONSES = {
  BadRequest: {
    description: 'Invalid parameters or body (`errors` names every problem), or no `X-API-Key` header ("No token found")',
    content: {
      'application/json': {
        schema: { anyOf: [{ $ref: '#/components/schemas/ValidationError' }, { $ref: '#/components/schemas/Error' }] },
        examples: {
          validation: { value: { error: 'Validation failed', errors: [{ path: 'sku', message: 'is required' }] } },
          missingKey: { value: { error: 'No token found' } },
        },
      },
    },
  },
  Unauthorized: { description: 'Unknown or revoked API key, or an API key sent as a Bearer token', content: errorBody('Invalid API key') },
  Forbidden: { description: 'Plain HTTP while the deployment requires HTTPS', content: errorBody('HTTPS required') },
  PayloadTooLarge: { description: 'Body over the configured limit (1 MB by default)', content: errorBody('Request body is too large') },
  UnsupportedMediaType: { description: 'A body that is not `application/json`', content: errorBody('Request bodies must be JSON: send Content-Type: application/json') },
  RequestTimeout: { description: 'The request (headers and body) did not arrive within the request timeout; the connection is closed', content: errorBody('The request did not arrive in time') },
  HeadersTooLarge: { description: 'The request line and headers are over 16 KB (a very long query string, say)', content: errorBody('The request line and headers are too large (16 KB at most)') },
  TooManyRequests: {
    description: 'Rate limit exceeded: wait `Retry-After` seconds',
    headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
    content: errorBody('Rate limit exceeded'),
  },
  ServiceUnavailable: {
    description: 'The database could not be reached (a restart, a failover): retry after `Retry-After` seconds',
    headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } },
    content: errorBody('The database is unavailable; retry shortly'),
  },
  InternalError: {
    description: 'An unexpected fault; quote `requestId` when reporting it',
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/Error' },
        example: { error: 'Internal server error', requestId: '5d1c0e0a-58a4-4b9e-9d34-0c1f3b1e2a77' },
      },
    },
  },
};

const HEADERS = {
  'X-Request-Id': { description: 'The request id (yours, when you sent a sane `X-Request-Id`)', schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'Requests allowed in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'When the window resets, in Unix epoch seconds', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  Link: { description: 'RFC 8288 link to the next page (`rel="next"`), present when this page is full', schema: { type: 'string' } },
  [REPLAYED_HEADER]: {
    description: '`true` when this is the stored answer to an earlier request with the same `Idempotency-Key` (nothing was done again)',
    schema: { type: 'string', enum: ['true'] },
  },
};

const PARAMETERS = {
  IdempotencyKey: {
    name: IDEMPOTENCY_HEADER,
    in: 'header',
    required: false,
    description: `Makes a retry safe: a key you choose (a UUID, say) for this request, at most ${MAX_KEY_LENGTH} characters. `
      + `For ${KEY_LIFETIME_HOURS} hours a retry with the same key, method, path and body (byte for byte) gets the first answer again `
      + `(marked \`${REPLAYED_HEADER}: true\`) and changes nothing; the same key with another request is a 409. Only `
      + 'successful answers are kept: after a 4xx or 5xx nothing was changed and the key can be used again.',
    schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
  },
};

const COMMON_HEADERS = {
  'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
};

function parameters(route: AnyRoute, components: Components): JsonSchema[] {
  const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name, in: 'path', required: true, schema: { type: 'string' },
  }));
  const shape = (route.query?.schema ?? {}) as Record<string, AnyStruct>;
  const queryParams = Object.entries(shape).map(([name, field]) => {
    const schema = toJsonSchema(field, components);
    const { description, ...rest } = schema;
    return compact({ name, in: 'query', required: !metaOf(field).optional, description, schema: rest });
  });
  const idempotencyKey = route.method === 'post' ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : [];
  return [...pathParams, ...queryParams, ...idempotencyKey];
}

const IDEMPOTENCY_CONFLICT = 'The `Idempotency-Key` was used before with another method, path or body, or the first request '
  + 'with it is still running (then retry after `Retry-After` seconds).';

function responses(route: AnyRoute, components: Components): Record<string, unknown> {
  const { success } = route;
  const isPost = route.method === 'post';
  const headers: Record<string, unknown> = { ...COMMON_HEADERS };
  if (success.list) headers.Link = { $ref: '#/components/headers/Link' };
  if (isPost) headers[REPLAYED_HEADER] = { $ref: `#/components/headers/${REPLAYED_HEADER}` };
  const out: Record<string, unknown> = {
    [success.status]: {
      description: success.description,
      headers,
      content: success.schema ? { 'application/json': { schema: toJsonSchema(success.schema, components) } } : undefined,
    },
    400: { $ref: '#/components/responses/BadRequest' },
    401: { $ref: '#/components/responses/Unauthorized' },
    403: { $ref: '#/components/responses/Forbidden' },
  };
  const errors: Record<string, string> = { ...route.errors };
  if (isPost) errors[409] = errors[409] ? `${errors[409]} Or: ${IDEMPOTENCY_CONFLICT}` : IDEMPOTENCY_CONFLICT;
  for (const [status, description] of Object.entries(errors)) {
    out[status] = compact({
      description,
      headers: isPost && status === '409' ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : undefined,
      content: errorBody(description),
    });
  }
  // Every POST and PATCH reads a JSON body, whether or not the route wants one.
  if (isPost || route.method === 'patch') {
    out[413] = { $ref: '#/components/responses/PayloadTooLarge' };
    out[415] = { $ref: '#/components/responses/UnsupportedMediaType' };
  }
  out[408] = { $ref: '#/components/responses/RequestTimeout' };
  out[431] = { $ref: '#/components/responses/HeadersTooLarge' };
  out[429] = { $ref: '#/components/responses/TooManyRequests' };
  out[500] = { $ref: '#/components/responses/InternalError' };
  out[503] = { $ref: '#/components/responses/ServiceUnavailable' };
  return out;
}

export const API_PREFIX = '/rest/api/v2';

/** `tags` describes every tag a route uses (standard tools ask for it). */
/** The headers of every webhook delivery (Standard Webhooks). */
const DELIVERY_HEADERS = [
  ['webhook-id', 'The event id: the same on every retry and redelivery. Deduplicate on it.'],
  ['webhook-timestamp', 'When this attempt was signed, in Unix seconds. Refuse old ones (the verifiers allow 5 minutes).'],
  ['webhook-signature', '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the subscription\'s secret; during a rotation two, space-separated.'],
].map(([name, description]) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }));

/** OpenAPI 3.1 `webhooks`: what a subscription receives for each kind of event, so clients can generate the types. */
function webhooksOf(events: Record<string, AnyStruct>, components: Components): Record<string, unknown> {
  return Object.fromEntries(Object.entries(events).map(([type, data]) => [type, {
    post: {
      operationId: `on${type.replace(/(^|[._])(\w)/g, (_, _sep, c: string) => c.toUpperCase())}`,
      summary: `The \`${type}\` event`,
      description: `Sent to every enabled subscription of the account that asked for \`${type}\`${type === 'webhook.ping' ? ' (only by `POST /webhooks/{id}/ping`)' : ' or `*`'}. `
        + 'Answer 2xx within 10 s to acknowledge; anything else is retried with the same `webhook-id` for about three days.',
      tags: ['Webhooks'],
      security: [],
      parameters: DELIVERY_HEADERS,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: {
          type: 'object',
          required: ['id', 'type', 'createdAt', 'data'],
          properties: {
            id: { type: 'string', description: 'The event id (also `webhook-id`)' },
            type: { const: type },
            createdAt: { type: 'string', format: 'date-time' },
            data: toJsonSchema(data, components),
          },
        } } },
      },
      responses: {
        200: { description: 'Any 2xx acknowledges the event' },
        410: { description: 'Gone: the subscription is disabled at once' },
        429: { description: 'Too many: the next attempt waits `Retry-After` seconds' },
      },
    },
  }]));
}

export interface ApiDescription {
  routes: AnyRoute[];
  version: string;
  /** Each tag the routes use, with what it groups. */
  tags: Record<string, string>;
  /** Each kind of event, with the record its `data` carries. */
  events: Record<string, AnyStruct>;
}

export function buildOpenApi({ routes, version, tags, events }: ApiDescription): JsonSchema {
  const undescribed = [...new Set(routes.map((route) => route.tag))].filter((tag) => !tags[tag]);
  if (undescribed.length) throw new Error(`buildOpenApi: describe the tags ${undescribed.join(', ')}`);
  const schemas: Components = {
    Error: {
      type: 'object',
      required: ['error'],
      properties: { error: { type: 'string' }, requestId: { type: 'string', description: 'On 500s: the request id to quote' } },
      additionalProperties: true,
      description: 'Most errors. Conflicts (409) add fields that name what conflicted.',
    },
    Problem: {
      type: 'object',
      required: ['path', 'message'],
      properties: {
        path: { type: 'string', description: 'Where the problem is, as `lineItems[0].quantity`; `body` or `query` for the whole value' },
        message: { type: 'string' },
      },
    },
    ValidationError: {
      type: 'object',
      required: ['error', 'errors'],
      properties: {
        error: { type: 'string', const: 'Validation failed' },
        errors: { type: 'array', items: { $ref: '#/components/schemas/Problem' }, description: 'Every problem at once' },
      },
    },
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const body = route.body
      ? { required: !metaOf(route.body).optional, content: { 'application/json': { schema: toJsonSchema(route.body, schemas) } } }
      : undefined;
    paths[route.path] ??= {};
    paths[route.path]![route.method] = compact({
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      parameters: parameters(route, schemas),
      requestBody: body,
      responses: responses(route, schemas),
    });
  }

  paths['/health'] = {
    servers: [{ url: '/' }],
    get: {
      operationId: 'health',
      summary: 'Health check',
      description: 'Outside the API prefix, needs no key and is not rate limited.',
      tags: ['Operations'],
      security: [],
      responses: {
        200: { description: 'The database answers', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } } } },
        503: { description: 'The database does not answer', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'unavailable' }, error: { type: 'string' } } } } } },
      },
    },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Stockroom API',
      version,
      contact: { name: 'Stockroom API support' },
      description: 'Inventory and order REST API. Send your key in the `X-API-Key` header. '
        + 'Lists take `page` and `limit` (or `size`), answer `{data, page, limit}` and link the next page in a `Link` header. '
        + 'Limits: 100 requests per minute per key, 20 per minute per IP without a valid key (defaults; counted per web process).',
    },
    servers: [{ url: API_PREFIX }],
    security: [{ ApiKey: [] }],
    tags: [...Object.entries(tags).map(([name, description]) => ({ name, description })), { name: 'Operations', description: 'Health checks for load balancers and monitors' }],
    paths,
    webhooks: webhooksOf(events, schemas),
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas,
      parameters: PARAMETERS,
      responses: RESPONSES,
      headers: HEADERS,
    },
  };
}
