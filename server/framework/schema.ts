// Building blocks for request and response schemas. Each helper returns a superstruct Struct (used to validate
// and to infer types) and records what OpenAPI needs to know about it (used by openapi.ts), so the document
// is generated from the very structs the routes validate with.
import * as s from 'superstruct';
import type { Struct } from 'superstruct';
import { decimalProblem, MAX_DECIMAL, PLACES } from '../../shared/decimal.ts';
import { formatPath } from '../../shared/errors.ts';

export type { Infer, Struct } from 'superstruct';
// These carry their own OpenAPI shape (see openapi.ts); object() below rejects unknown keys.
export { array, boolean, enums } from 'superstruct';

export interface JsonSchema {
  [keyword: string]: unknown;
}

interface Meta {
  schema?: JsonSchema;
  name?: string;
  optional?: boolean;
  nullable?: boolean;
  default?: unknown;
  inner?: AnyStruct;
  /** oneOf: the shape a value is checked as. */
  choose?: (value: unknown) => AnyStruct | undefined;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyStruct = Struct<any, any>;
type ObjectShape = Record<string, AnyStruct>;

const META = new WeakMap<AnyStruct, Meta>();

export function metaOf(struct: AnyStruct): Meta {
  return META.get(struct) ?? {};
}

function withMeta<T extends AnyStruct>(struct: T, meta: Meta): T {
  META.set(struct, { ...META.get(struct), ...meta });
  return struct;
}

/** Adds OpenAPI keywords (description, example, format, ...) to a struct. */
export function describe<T extends AnyStruct>(struct: T, schema: JsonSchema): T {
  return withMeta(struct, { schema: { ...metaOf(struct).schema, ...schema } });
}

/** Names a struct: OpenAPI lists it under components.schemas and refers to it with $ref. */
export function named<T extends AnyStruct>(name: string, struct: T): T {
  return withMeta(struct, { name });
}

export function optional<T, S>(struct: Struct<T, S>): Struct<T | undefined, S> {
  return withMeta(s.optional(struct), { optional: true, inner: struct });
}

export function nullable<T, S>(struct: Struct<T, S>): Struct<T | null, S> {
  return withMeta(s.nullable(struct), { nullable: true, inner: struct });
}

/** Optional in the request; the value is filled in when absent. */
export function withDefault<T, S>(struct: Struct<T, S>, value: T): Struct<T, S> {
  return withMeta(s.defaulted(struct, value), { optional: true, default: value, inner: struct });
}

export function object<S extends ObjectShape>(shape: S) {
  return s.object(shape);
}

export function text(options: { max?: number; min?: number; description?: string; format?: string } = {}): Struct<string, null> {
  const { min = 0, max = 1000, description } = options;
  const struct = s.refine(s.string(), 'text', (value) => {
    // PostgreSQL text cannot hold NUL: refused here, it would be a database error.
    if (value.includes('\u0000')) return 'must not contain NUL characters';
    const length = value.trim().length;
    if (min > 0 && length === 0) return 'must not be blank';
    if (length < min) return `must be at least ${min} characters`;
    if (value.length > max) return `must be at most ${max} characters`;
    return true;
  });
  return describe(struct, { type: 'string', minLength: min, maxLength: max, description, format: options.format });
}

// What JSON Schema validators (ajv-formats) accept as `format: email`, which the document promises.
const EMAIL = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export function email(): Struct<string, null> {
  const struct = s.refine(s.string(), 'email', (value) =>
    (EMAIL.test(value) && value.length <= 254) || 'must be a valid email address');
  return describe(struct, { type: 'string', format: 'email', maxLength: 254 });
}

export function id(description?: string): Struct<string, null> {
  return describe(s.string(), { type: 'string', description, example: '3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14' });
}

export function timestamp(description?: string): Struct<string, null> {
  return describe(s.string(), { type: 'string', format: 'date-time', description });
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Whether the day exists: no February 30th, and no year 0, which PostgreSQL does not have. */
function isCalendarDay(year: number, month: number, day: number): boolean {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return year >= 1 && days !== undefined && day >= 1 && day <= days;
}

/**
 * An ISO-8601 instant, strictly: a date that exists, a time of day that exists, an optional offset (none means
 * UTC), a year from 1 to 9999. Undefined for anything else: JavaScript's Date rolls 2020-02-30 over to March and
 * takes year 0, which PostgreSQL then refuses.
 */
export function parseTimestamp(text: string): Date | undefined {
  const match = INSTANT.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction = '0', zone = 'Z'] = match;
  if (!isCalendarDay(Number(year), Number(month), Number(day))) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  const offset = /^([+-])(\d{2}):?(\d{2})$/.exec(zone);
  if (offset && (Number(offset[2]) > 23 || Number(offset[3]) > 59)) return undefined;
  const offsetMinutes = offset ? (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) : 0;
  // setUTCFullYear, not Date.UTC, which reads years 0-99 as 1900-1999.
  const instant = new Date(0);
  instant.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  instant.setUTCHours(Number(hour), Number(minute) - offsetMinutes, Number(second), Number(fraction.slice(0, 3).padEnd(3, '0')));
  const resultYear = instant.getUTCFullYear();
  return resultYear >= 1 && resultYear <= 9999 ? instant : undefined;
}

/** An instant a request names (parseTimestamp's rules); with `future`, one still to come. */
export function instant(options: { future?: boolean; description?: string; example?: string } = {}): Struct<string, null> {
  const struct = s.refine(s.string(), 'instant', (value) => {
    const time = parseTimestamp(value);
    if (!time) return 'must be an ISO-8601 timestamp, as 2026-12-01T09:00:00Z';
    if (options.future && time.getTime() <= Date.now()) return 'must be in the future';
    return true;
  });
  return describe(struct, { type: 'string', format: 'date-time', description: options.description, example: options.example });
}

/** A calendar date, `YYYY-MM-DD`, that exists (no February 30th). */
export function calendarDate(description?: string): Struct<string, null> {
  const struct = s.refine(s.string(), 'calendarDate', (value) => {
    const match = DATE.exec(value);
    return (match !== null && isCalendarDay(Number(match[1]), Number(match[2]), Number(match[3]))) || 'must be a calendar date as YYYY-MM-DD';
  });
  return describe(struct, { type: 'string', format: 'date', description, example: '2026-12-01' });
}

export function integer(schema: JsonSchema = {}): Struct<number, null> {
  return describe(s.integer(), { type: 'integer', ...schema });
}

/** An array of `min` to `max` entries, each checked by `struct`. */
export function list<T, S>(entry: Struct<T, S>, options: { min: number; max: number; description?: string }): Struct<T[], Struct<T, S>> {
  const { min, max } = options;
  const struct = s.refine(s.array(entry), 'length', (value) => {
    if (value.length < min) return min === 1 ? 'must not be empty' : `must have at least ${min} entries`;
    if (value.length > max) return `must have at most ${max} entries`;
    return true;
  });
  return describe(struct, { minItems: min, maxItems: max, description: options.description });
}

/** What `oneOf`'s `pick` answers for a value that fits none of the shapes. */
export interface NoShape {
  /** The field the problem is reported at, relative to the value: `items`. */
  field: string;
  message: string;
  /** Checked all the same (the fields every shape shares), so that its problems are reported with this one. */
  shared?: AnyStruct;
}

/**
 * A value of one of several (named) shapes, told apart by `pick` from the value as sent, usually by a field only
 * one shape has. The value is checked as the shape picked, so problems name paths inside that shape rather than
 * a list of every shape's complaints; OpenAPI shows it as `oneOf` the shapes.
 */
export function oneOf<Shapes extends AnyStruct[]>(
  shapes: Shapes,
  pick: (value: unknown) => Shapes[number] | NoShape,
): Struct<s.Infer<Shapes[number]>, Shapes> {
  const chosen = (value: unknown): { shape?: AnyStruct; none?: NoShape } => {
    const choice = pick(value);
    return choice instanceof s.Struct ? { shape: choice } : { none: choice as NoShape };
  };
  const choose = (value: unknown) => {
    const { shape, none } = chosen(value);
    return shape ?? none?.shared;
  };
  return withMeta(new s.Struct<s.Infer<Shapes[number]>, Shapes>({
    type: 'oneOf',
    schema: shapes,
    *entries(value, ctx) {
      const { shape, none } = chosen(value);
      const checked = shape ?? none?.shared;
      if (checked) yield* checked.entries(value, ctx);
    },
    validator(value, ctx) {
      const { shape, none } = chosen(value);
      if (shape) return shape.validator(value, ctx);
      // A refinement-style failure: errors.ts reports its message as written, at the field named.
      return { path: [...ctx.path, none!.field], key: none!.field, refinement: 'oneOf', message: none!.message };
    },
    coercer(value, ctx) {
      const { shape } = chosen(value);
      return shape ? shape.coercer(value, ctx) : value;
    },
    refiner(value, ctx) {
      const { shape } = chosen(value);
      return shape ? shape.refiner(value, ctx) : [];
    },
  }), { choose });
}

/** Every field of a create struct made optional and defaults dropped, plus `extra` fields: the body of a PATCH. */
export function patchOf<T extends Record<string, unknown>, E extends ObjectShape = Record<string, never>>(
  create: Struct<T, any>,
  extra?: E,
): Struct<Partial<T> & { [K in keyof E]?: s.Infer<E[K]> }, ObjectShape> {
  const shape: ObjectShape = {};
  for (const [key, field] of Object.entries(create.schema as ObjectShape)) {
    const meta = metaOf(field);
    shape[key] = meta.optional ? (meta.default !== undefined && meta.inner ? optional(meta.inner) : field) : optional(field);
  }
  return s.object({ ...shape, ...extra }) as unknown as Struct<Partial<T> & { [K in keyof E]?: s.Infer<E[K]> }, ObjectShape>;
}

interface DecimalOptions {
  /** 'positive': > 0; 'nonNegative': >= 0; 'nonZero': signed but not 0. */
  sign?: 'positive' | 'nonNegative' | 'nonZero';
  description?: string;
  example?: number;
}

/** An exact decimal: a finite JSON number with at most 6 decimal places, stored as numeric. */
export function decimal(options: DecimalOptions = {}): Struct<number, null> {
  const { sign } = options;
  const struct = s.refine(s.number(), 'decimal', (value) => {
    const problem = decimalProblem(value);
    if (problem) return problem;
    if (sign === 'positive' && value <= 0) return 'must be greater than 0';
    if (sign === 'nonNegative' && value < 0) return 'must not be negative';
    if (sign === 'nonZero' && value === 0) return 'must not be 0';
    return true;
  });
  // The 6-decimal rule is stated in words: `multipleOf: 0.000001` would make JSON Schema validators (ajv, Prism)
  // reject valid values, as 0.4 is not a multiple of 0.000001 in floating point.
  const rule = `At most ${PLACES} decimal places; stored exactly.`;
  return describe(struct, {
    type: 'number',
    description: options.description ? `${options.description.replace(/\.?$/, '.')} ${rule}` : rule,
    // Without one, Swagger UI shows the minimum as the example.
    example: options.example ?? (sign === 'nonZero' ? -3 : sign === 'positive' ? 5 : 10),
    ...(sign === 'positive' ? { exclusiveMinimum: 0 } : {}),
    ...(sign === 'nonNegative' ? { minimum: 0 } : {}),
    ...(sign === 'nonZero' ? { not: { const: 0 } } : {}),
    ...(sign === 'positive' || sign === 'nonNegative' ? { maximum: MAX_DECIMAL } : { minimum: -MAX_DECIMAL, maximum: MAX_DECIMAL }),
  });
}

// --- Query strings: every value arrives as a string, so these coerce before they check.

/**
 * s.coerce(base, s.string(), parse) without its s.is(value, s.string()), which builds a StructError (stack trace
 * included) for every parameter that is absent: most of them on most requests.
 */
function fromQueryString<T, S>(base: Struct<T, S>, parse: (raw: string) => unknown): Struct<T, S> {
  return new s.Struct({ ...base, coercer: (value, ctx) => base.coercer(typeof value === 'string' ? parse(value) : value, ctx) });
}

export function queryInteger(options: { min: number; max: number; description?: string }): Struct<number, null> {
  const base = s.refine(s.integer(), 'range', (value) =>
    (value >= options.min && value <= options.max) || `must be an integer from ${options.min} to ${options.max}`);
  const struct = fromQueryString(base, (raw) => (/^-?\d+$/.test(raw) ? Number(raw) : raw));
  return describe(struct, { type: 'integer', minimum: options.min, maximum: options.max, description: options.description });
}

export function queryBoolean(description?: string): Struct<boolean, null> {
  const struct = fromQueryString(s.boolean(), (raw) => (raw === 'true' ? true : raw === 'false' ? false : raw));
  return describe(struct, { type: 'boolean', description });
}

export function queryTimestamp(description?: string): Struct<Date, null> {
  const struct = fromQueryString(
    s.refine(s.date(), 'timestamp', (value) => !Number.isNaN(value.getTime()) || 'must be an ISO-8601 timestamp'),
    // An invalid Date rather than the text: the failure then says "must be an ISO-8601 timestamp", not a type.
    (raw) => parseTimestamp(raw) ?? new Date(Number.NaN),
  );
  return describe(struct, { type: 'string', format: 'date-time', description });
}

// --- Volume: what is too big to validate at all.

/** A problem found before validation, at a path of the value. */
export interface VolumeProblem {
  path: Array<string | number>;
  message: string;
}

/** Unknown fields a value may carry before they are reported as one problem rather than one each. */
const UNKNOWN_FIELDS_NAMED = 100;

/**
 * Arrays longer than their struct allows, and objects with more unknown fields than a problem list names, found
 * by walking the value beside its struct without validating it: superstruct would build a failure for every
 * element and field it rejects, and a body of 500,000 wrong entries would hold the event loop for a second.
 * Stops after `limit` problems. An empty answer means the value is of a size worth validating.
 */
export function volumeProblems(struct: AnyStruct, value: unknown, limit: number): VolumeProblem[] {
  const found: VolumeProblem[] = [];
  const unknownFields: { count: number; first?: Array<string | number> } = { count: 0 };
  const walk = (current: AnyStruct, item: unknown, path: Array<string | number>): void => {
    if (found.length >= limit || item === null || typeof item !== 'object') return;
    const meta = metaOf(current);
    if (meta.inner) return walk(meta.inner, item, path);
    if (meta.choose) {
      const shape = meta.choose(item);
      return shape ? walk(shape, item, path) : undefined;
    }
    if (Array.isArray(item)) {
      if (current.type !== 'array') return;
      const max = meta.schema?.maxItems;
      if (typeof max === 'number' && item.length > max) {
        found.push({ path, message: `must have at most ${max} entries` });
        return;
      }
      const element = current.schema as AnyStruct | null;
      if (element) for (let index = 0; index < item.length && found.length < limit; index++) walk(element, item[index], [...path, index]);
      return;
    }
    if (current.type !== 'object' && current.type !== 'type') return;
    const shape = (current.schema ?? {}) as Record<string, AnyStruct>;
    for (const [key, field] of Object.entries(item)) {
      if (Object.hasOwn(shape, key)) walk(shape[key]!, field, [...path, key]);
      else if (current.type === 'object') {
        unknownFields.count += 1;
        unknownFields.first ??= [...path, key];
      }
    }
  };
  walk(struct, value, []);
  if (unknownFields.count > UNKNOWN_FIELDS_NAMED && found.length < limit) {
    found.push({ path: [], message: `has ${unknownFields.count} fields that are not allowed (the first at ${formatPath(unknownFields.first!)})` });
  }
  return found;
}
