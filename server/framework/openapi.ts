// The OpenAPI 3.1 document, generated from the route table and the structs the routes validate with.
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
  return [...pathParams, ...queryParams];
}

function responses(route: AnyRoute, components: Components): Record<string, unknown> {
  const { success } = route;
  const out: Record<string, unknown> = {
    [success.status]: {
      description: success.description,
      headers: success.list ? { ...COMMON_HEADERS, Link: { $ref: '#/components/headers/Link' } } : COMMON_HEADERS,
      content: success.schema ? { 'application/json': { schema: toJsonSchema(success.schema, components) } } : undefined,
    },
    400: { $ref: '#/components/responses/BadRequest' },
    401: { $ref: '#/components/responses/Unauthorized' },
    403: { $ref: '#/components/responses/Forbidden' },
  };
  for (const [status, description] of Object.entries(route.errors ?? {})) {
    out[status] = { description, content: errorBody(description as string) };
  }
  if (route.body) {
    out[413] = { $ref: '#/components/responses/PayloadTooLarge' };
    out[415] = { $ref: '#/components/responses/UnsupportedMediaType' };
  }
  out[429] = { $ref: '#/components/responses/TooManyRequests' };
  out[500] = { $ref: '#/components/responses/InternalError' };
  out[503] = { $ref: '#/components/responses/ServiceUnavailable' };
  return out;
}

export const API_PREFIX = '/rest/api/v2';

export function buildOpenApi(routes: AnyRoute[], version: string): JsonSchema {
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
      description: 'Inventory and order REST API. Send your key in the `X-API-Key` header. '
        + 'Lists take `page` and `limit` (or `size`), answer `{data, page, limit}` and link the next page in a `Link` header. '
        + 'Limits: 100 requests per minute per key, 20 per minute per IP without a valid key (defaults; counted per web process).',
    },
    servers: [{ url: API_PREFIX }],
    security: [{ ApiKey: [] }],
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas,
      responses: RESPONSES,
      headers: HEADERS,
    },
  };
}
