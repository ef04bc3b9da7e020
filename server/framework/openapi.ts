// An OpenAPI 3.1 document generated from a route table and the structs the routes validate with. What every
// operation of an API shares (its headers, its error answers, its conventions) is the application's to say: it
// comes in as components and conventions, and nothing here names an application's own headers or limits.
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

/** What an application adds to every operation, besides what each route declares. */
export interface Conventions {
  /** Parameters after the route's path and query parameters (a header every POST takes, say). */
  parameters?(route: AnyRoute): JsonSchema[];
  /** Headers of the route's success answer. */
  successHeaders?(route: AnyRoute): Record<string, unknown>;
  /** The response documenting a status the route declares in `errors`, from why the route answers it. */
  errorResponse(route: AnyRoute, status: string, description: string): JsonSchema;
  /** Answers the middleware in front of the routes may give to this route (validation, authentication, limits). */
  sharedResponses?(route: AnyRoute): Record<string, unknown>;
}

export interface DocumentSpec {
  routes: AnyRoute[];
  info: JsonSchema;
  servers: JsonSchema[];
  /** Each tag the routes use, with what it groups. */
  tags: Record<string, string>;
  security?: JsonSchema[];
  /** Shared components; named structs the routes use are added to `schemas`. */
  components: { schemas?: Record<string, JsonSchema>; [kind: string]: unknown };
  conventions: Conventions;
  /** Paths that are not routes of the table (served elsewhere), as written. */
  paths?: Record<string, unknown>;
  /** OpenAPI `webhooks`, given the function that turns a struct into a schema of this document. */
  webhooks?(schemaOf: (struct: AnyStruct) => JsonSchema): Record<string, unknown>;
}

function parameters(route: AnyRoute, conventions: Conventions, components: Components): JsonSchema[] {
  const pathParams = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name, in: 'path', required: true, schema: { type: 'string' },
  }));
  const shape = (route.query?.schema ?? {}) as Record<string, AnyStruct>;
  const queryParams = Object.entries(shape).map(([name, field]) => {
    const schema = toJsonSchema(field, components);
    const { description, ...rest } = schema;
    return compact({ name, in: 'query', required: !metaOf(field).optional, description, schema: rest });
  });
  return [...pathParams, ...queryParams, ...(conventions.parameters?.(route) ?? [])];
}

function responses(route: AnyRoute, conventions: Conventions, components: Components): Record<string, unknown> {
  const { success } = route;
  const declared = Object.fromEntries(Object.entries(route.errors ?? {})
    .map(([status, description]) => [status, conventions.errorResponse(route, status, description!)]));
  return {
    [success.status]: compact({
      description: success.description,
      headers: conventions.successHeaders?.(route),
      content: success.schema ? { 'application/json': { schema: toJsonSchema(success.schema, components) } } : undefined,
    }),
    ...conventions.sharedResponses?.(route),
    ...declared,
  };
}

export function buildOpenApi(spec: DocumentSpec): JsonSchema {
  const undescribed = [...new Set(spec.routes.map((route) => route.tag))].filter((tag) => !spec.tags[tag]);
  if (undescribed.length) throw new Error(`buildOpenApi: describe the tags ${undescribed.join(', ')}`);
  const schemas: Components = { ...spec.components.schemas };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of spec.routes) {
    const body = route.body
      ? { required: !metaOf(route.body).optional, content: { 'application/json': { schema: toJsonSchema(route.body, schemas) } } }
      : undefined;
    paths[route.path] ??= {};
    paths[route.path]![route.method] = compact({
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      parameters: parameters(route, spec.conventions, schemas),
      requestBody: body,
      responses: responses(route, spec.conventions, schemas),
    });
  }
  const webhooks = spec.webhooks?.((struct) => toJsonSchema(struct, schemas));
  return compact({
    openapi: '3.1.0',
    info: spec.info,
    servers: spec.servers,
    security: spec.security,
    tags: Object.entries(spec.tags).map(([name, description]) => ({ name, description })),
    paths: { ...paths, ...spec.paths },
    webhooks,
    components: { ...spec.components, schemas },
  });
}
