// Stockroom's OpenAPI document: the route table, and what every operation shares in front of its handler (the
// middleware's answers, the rate-limit and request-id headers, Idempotency-Key on POST), the webhooks it sends
// and /health. framework/openapi.ts turns it into the document.
import pkg from '../package.json' with { type: 'json' };
import { PING_EVENT } from '../shared/events.ts';
import { buildOpenApi, type Conventions } from './framework/openapi.ts';
import type { AnyRoute } from './framework/route.ts';
import type { AnyStruct, JsonSchema } from './framework/schema.ts';
import { IDEMPOTENCY_HEADER, KEY_LIFETIME_HOURS, MAX_KEY_LENGTH, REPLAYED_HEADER } from './middleware/idempotency.ts';
import { METRICS_PATH } from './metrics.ts';
import { EVENT_DATA } from './resources/events/schema.ts';
import { API_PREFIX, apiRoutes, apiTags } from './routes.ts';

const errorBody = (example: string) => ({
  'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: example } },
});

const SCHEMAS = {
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
      errors: {
        type: 'array', items: { $ref: '#/components/schemas/Problem' }, maxItems: 100,
        description: 'Every problem at once, up to 100 (`omittedErrors` counts the rest)',
      },
      omittedErrors: { type: 'integer', minimum: 1, description: 'Present when there were more than 100 problems: how many are not listed' },
    },
  },
};

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
  Link: {
    description: 'RFC 8288 link to the next page (`rel="next"`), present when this page is full. Its URL is relative to the '
      + 'API\'s address (`</rest/api/v2/items?page=2&...>`), or absolute when the deployment sets `PUBLIC_URL`.',
    schema: { type: 'string' },
  },
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

const IDEMPOTENCY_CONFLICT = 'The `Idempotency-Key` was used before with another method, path or body, or the first request '
  + 'with it is still running (then retry after `Retry-After` seconds).';

const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
const takesBody = (route: AnyRoute) => route.method === 'post' || route.method === 'patch';

function conflict(description: string) {
  return { description, headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } }, content: errorBody(description) };
}

const CONVENTIONS: Conventions = {
  parameters: (route) => (route.method === 'post' ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
  successHeaders: (route) => ({
    ...COMMON_HEADERS,
    ...(route.success.list ? { Link: { $ref: '#/components/headers/Link' } } : {}),
    ...(route.method === 'post' ? { [REPLAYED_HEADER]: { $ref: `#/components/headers/${REPLAYED_HEADER}` } } : {}),
  }),
  // Every POST may also be an Idempotency-Key conflict.
  errorResponse: (route, status, description) => (route.method === 'post' && status === '409'
    ? conflict(`${description} Or: ${IDEMPOTENCY_CONFLICT}`)
    : { description, content: errorBody(description) }),
  sharedResponses: (route) => ({
    400: ref('BadRequest'),
    401: ref('Unauthorized'),
    403: ref('Forbidden'),
    ...(route.method === 'post' ? { 409: conflict(IDEMPOTENCY_CONFLICT) } : {}),
    ...(takesBody(route) ? { 413: ref('PayloadTooLarge'), 415: ref('UnsupportedMediaType') } : {}),
    408: ref('RequestTimeout'),
    431: ref('HeadersTooLarge'),
    429: ref('TooManyRequests'),
    500: ref('InternalError'),
    503: ref('ServiceUnavailable'),
  }),
};

/** The headers of every webhook delivery (Standard Webhooks). */
const DELIVERY_HEADERS = [
  ['webhook-id', 'The event id: the same on every retry and redelivery. Deduplicate on it.'],
  ['webhook-timestamp', 'When this attempt was signed, in Unix seconds. Refuse old ones (the verifiers allow 5 minutes).'],
  ['webhook-signature', '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the subscription\'s secret; during a rotation two, space-separated.'],
].map(([name, description]) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }));

/** OpenAPI 3.1 `webhooks`: what a subscription receives for each kind of event, so clients can generate the types. */
function webhooks(schemaOf: (struct: AnyStruct) => JsonSchema): Record<string, unknown> {
  return Object.fromEntries(Object.entries(EVENT_DATA).map(([type, data]) => [type, {
    post: {
      operationId: `on${type.replace(/(^|[._])(\w)/g, (_, _sep, c: string) => c.toUpperCase())}`,
      summary: `The \`${type}\` event`,
      description: `Sent to every enabled subscription of the account that asked for \`${type}\`${type === PING_EVENT ? ' (only by `POST /webhooks/{id}/ping`)' : ' or `*`'}. `
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
            data: schemaOf(data),
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

const HEALTH = {
  servers: [{ url: '/' }],
  get: {
    operationId: 'health',
    summary: 'Health check',
    description: 'Outside the API prefix, needs no key. Limited per client IP like the docs (`RATE_LIMIT_PUBLIC_PER_IP`, 300 a minute by default), apart from the API\'s limits.',
    tags: ['Operations'],
    security: [],
    responses: {
      200: { description: 'The database answers', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } } } },
      503: { description: 'The database does not answer', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'unavailable' }, error: { type: 'string' } } } } } },
      429: { $ref: '#/components/responses/TooManyRequests' },
    },
  },
};

const METRICS = {
  servers: [{ url: '/' }],
  get: {
    operationId: 'metrics',
    summary: 'Metrics for Prometheus',
    description: 'Only when the deployment sets `METRICS_TOKEN`, and only to `Authorization: Bearer <METRICS_TOKEN>`: to '
      + 'anyone else, and when the token is unset, the path does not exist (404). Prometheus\'s text format: requests and '
      + 'their durations by route template and status (`http_requests_total`, `http_request_duration_seconds`), the '
      + 'database pool (`stockroom_db_pool_connections`), Node\'s process metrics, and from PostgreSQL, read at most every '
      + '5 seconds: `stockroom_events_undelivered`, `stockroom_oldest_undelivered_event_age_seconds`, '
      + '`stockroom_webhook_attempts_last_minute`, `stockroom_jobs`, `stockroom_webhooks_disabled`.',
    tags: ['Operations'],
    security: [{ MetricsToken: [] }],
    responses: {
      200: {
        description: 'The metrics (`text/plain; version=0.0.4`)',
        content: { 'text/plain': { schema: { type: 'string' }, example: 'stockroom_events_undelivered 0\n' } },
      },
      404: { description: 'No `METRICS_TOKEN` is set, or the request does not bear it', content: errorBody('No route for GET /metrics') },
      429: { $ref: '#/components/responses/TooManyRequests' },
    },
  },
};

/** The OpenAPI document: the routes, their tags, and the events webhooks deliver. */
export function apiDocument(): JsonSchema {
  return buildOpenApi({
    routes: apiRoutes,
    info: {
      title: 'Stockroom API',
      version: pkg.version,
      contact: { name: 'Stockroom API support' },
      description: 'Inventory and order REST API. Send your key in the `X-API-Key` header. '
        + 'Lists take `page` and `limit` (or `size`), answer `{data, page, limit}` and link the next page in a `Link` header. '
        + 'Limits (defaults): 100 requests per minute per key, shared by every web process; 20 per minute per IP without a valid key, counted per web process.',
    },
    servers: [{ url: API_PREFIX }],
    security: [{ ApiKey: [] }],
    tags: { ...apiTags, Operations: 'Health checks and metrics for load balancers and monitors' },
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        MetricsToken: { type: 'http', scheme: 'bearer', description: 'The deployment\'s `METRICS_TOKEN`, for `/metrics` only' },
      },
      schemas: SCHEMAS,
      parameters: PARAMETERS,
      responses: RESPONSES,
      headers: HEADERS,
    },
    conventions: CONVENTIONS,
    paths: { '/health': HEALTH, [METRICS_PATH]: METRICS },
    webhooks,
  });
}
