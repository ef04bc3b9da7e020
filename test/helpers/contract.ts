// The OpenAPI document is the promise: every response a test receives through the client is checked against it
// with a standard JSON Schema 2020-12 validator (ajv). The status must be listed for the operation and the body
// must validate against that status's schema; anything else fails the test that received it.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { API_PREFIX } from '../../server/routes.ts';
import type { JsonSchema } from '../../server/framework/schema.ts';
import { apiDocument } from '../../server/api-document.ts';

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Record<string, JsonSchema>;
}

interface Document {
  paths: Record<string, Record<string, { responses?: Record<string, JsonSchema> }>>;
  webhooks: Record<string, { post: { requestBody: { content: { 'application/json': { schema: JsonSchema } } } } }>;
  components: { responses: Record<string, JsonSchema>; schemas: Record<string, JsonSchema> };
}

class Contract {
  readonly operations: Operation[] = [];
  private readonly document: Document;
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<JsonSchema, ValidateFunction>();

  constructor() {
    this.document = apiDocument() as unknown as Document;
    // strict: false because OpenAPI's `example` is not a JSON Schema keyword.
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(this.ajv);
    this.ajv.addSchema({ $id: 'openapi.json', components: this.document.components });
    for (const [template, methods] of Object.entries(this.document.paths)) {
      const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
      for (const [method, operation] of Object.entries(methods)) {
        if (operation.responses) this.operations.push({ method: method.toUpperCase(), template, pattern, responses: operation.responses });
      }
    }
  }

  response(documented: JsonSchema): JsonSchema {
    return typeof documented.$ref === 'string' ? this.document.components.responses[documented.$ref.split('/').pop()!]! : documented;
  }

  /** A validator for a schema of the document; its `#/components/...` references resolve against the document. */
  validator(schema: JsonSchema): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi.json#/components/')));
      this.compiled.set(schema, validate);
    }
    return validate;
  }

  /** The body schema of the delivery of one kind of event, from the document's `webhooks`. */
  delivery(type: string): JsonSchema | undefined {
    return this.document.webhooks[type]?.post.requestBody.content['application/json'].schema;
  }

  get errorSchema(): JsonSchema {
    return this.document.components.schemas.Error!;
  }
}

let contract: Contract | undefined;

function broken(request: string, status: number, body: unknown, why: string): never {
  const shown = typeof body === 'string' ? body : JSON.stringify(body);
  throw new Error(`${request.slice(0, 500)} answered ${status}, which breaks the OpenAPI document: ${why}\n  body: ${shown.slice(0, 1000)}`);
}

/** Throws when the response breaks the document. Paths the document does not describe must answer a JSON `Error`. */
export function checkResponse(method: string, url: string, status: number, contentType: string, body: unknown): void {
  contract ??= new Contract();
  const request = `${method} ${url}`;
  const { pathname } = new URL(url);
  const path = pathname.startsWith(`${API_PREFIX}/`) ? pathname.slice(API_PREFIX.length) : pathname;
  const operation = contract.operations.find((candidate) => candidate.method === method && candidate.pattern.test(path));
  if (!operation) {
    if (status >= 400 && !(contentType.includes('application/json') && contract.validator(contract.errorSchema)(body))) {
      broken(request, status, body, 'an undocumented path or method must answer a JSON `Error`');
    }
    return;
  }
  const documented = operation.responses[String(status)];
  if (!documented) broken(request, status, body, `${operation.method} ${operation.template} lists only ${Object.keys(operation.responses).join(', ')}`);
  const content = contract.response(documented).content as Record<string, { schema: JsonSchema }> | undefined;
  if (!content) {
    if (body !== '') broken(request, status, body, 'the document promises no body');
    return;
  }
  // A text answer (Prometheus's format on /metrics) is checked for its type only: its schema is a string.
  const text = Object.keys(content).find((type) => type.startsWith('text/'));
  if (text && contentType.startsWith(text)) return;
  const json = content['application/json'];
  if (!json || !contentType.includes('application/json')) broken(request, status, body, `content type ${contentType || '(none)'}`);
  const validate = contract.validator(json.schema);
  if (!validate(body)) broken(request, status, body, JSON.stringify(validate.errors?.slice(0, 5)));
}

/** Throws when a webhook delivery's body breaks what the document's `webhooks` promise for its kind. */
export function checkDelivery(payload: { type?: unknown; [field: string]: unknown }): void {
  contract ??= new Contract();
  const type = String(payload.type);
  const schema = contract.delivery(type);
  if (!schema) throw new Error(`a delivery of kind ${type}, which the document's webhooks do not list`);
  const validate = contract.validator(schema);
  if (!validate(payload)) {
    throw new Error(`a ${type} delivery breaks the OpenAPI document: ${JSON.stringify(validate.errors?.slice(0, 5))}\n  body: ${JSON.stringify(payload).slice(0, 1000)}`);
  }
}
