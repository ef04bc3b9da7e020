// Generators for hostile requests, driven by the OpenAPI document so that every route, present and future, is
// covered: bodies that are valid by the document's schema and then broken in one place, or hostile throughout,
// and query strings built from each list route's parameters.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { JsonSchema } from '../../server/framework/schema.ts';

/** A JSON fragment sent as written: numbers JSON.stringify cannot write (`1e400`), deep nesting. */
export class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** An object whose keys are sent as given, `__proto__` included, in order, duplicates included. */
export class Entries {
  readonly entries: Array<[string, unknown]>;
  constructor(entries: Array<[string, unknown]>) {
    this.entries = entries;
  }
}

export function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Entries) return `{${value.entries.map(([key, inner]) => `${JSON.stringify(key)}:${toJson(inner)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') return toJson(new Entries(Object.entries(value)));
  return JSON.stringify(value) ?? 'null';
}

const nasty = <T>(...values: T[]) => fc.constantFrom(...values);

const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  nasty(0, -0, 1e308, -1e308, 5e-324, 1e21, 1e-7, 0.1 + 0.2, 2 ** 53 + 1, 999_999_999.999999, 999_999_999.9999995, 1_000_000_000, 1.0000001, -0.0000001),
  nasty(new Raw('1e400'), new Raw('-1e400'), new Raw('1e-400'), new Raw('123456789012345678901234567890'), new Raw('0.1234567'), new Raw('-0.0')),
);

const hostileString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  nasty('', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff\ud800', '\u202e', '😀'.repeat(300), 'x'.repeat(100_000), '__proto__',
    'null', 'true', '1e400', 'NaN', '-1', '0', '1.5', '2026-02-30', '0000-01-01', '9999-12-31T23:59:59Z', '+275760-09-13T00:00:00Z',
    '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', "'; drop table items; --", '%00', '../../etc/passwd',
    'http://169.254.169.254/latest', 'https://user:pass@example.com/x', 'javascript:alert(1)', '*', 'stock.adjusted,*'),
  fc.constant(null).map(() => randomUUID()),
);

const deep = fc.integer({ min: 100, max: 50_000 }).chain((depth) => nasty(
  new Raw(`${'['.repeat(depth)}${']'.repeat(depth)}`),
  new Raw(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
));

const KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'id', 'accountId', 'account_id', 'createdAt', ''];

export const hostileScalar = fc.oneof(fc.constant(null), fc.boolean(), hostileNumber, hostileString);

export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileScalar,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(fc.oneof(nasty(...KEYS), fc.string({ maxLength: 10 })), tie('value')), { maxLength: 4 }).map((entries) => new Entries(entries)),
    deep,
  ),
})).value;

// --- Valid values from the document's schemas

export interface SchemaContext {
  resolve(ref: string): JsonSchema;
  /** Values for fields that name records (`itemId`, `sku`), so that valid bodies reach the database. */
  fixtures: Record<string, string[]>;
}

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  'date-time': fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
  date: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  email: fc.emailAddress(),
  uri: nasty('http://127.0.0.1:9/hook', 'https://example.com/hook'),
};

function numberFor(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + (integer ? 1 : 0.25) : -1000;
  const max = typeof schema.maximum === 'number' ? Math.min(schema.maximum, 1000) : 1000;
  const base = integer
    ? fc.integer({ min: Math.ceil(min), max: Math.max(Math.ceil(min), Math.floor(max)) })
    : fc.integer({ min: Math.ceil(min * 4), max: Math.floor(max * 4) }).map((n) => n / 4);
  return schema.not ? base.filter((n) => n !== 0) : base;
}

/** A value valid by `schema` (as far as a schema can say: references may still name nothing). */
export function validValue(schema: JsonSchema, context: SchemaContext, field = ''): fc.Arbitrary<unknown> {
  if (typeof schema.$ref === 'string') return validValue(context.resolve(schema.$ref), context, field);
  if (Object.hasOwn(context.fixtures, field)) return fc.constantFrom(...context.fixtures[field]!);
  const members = (schema.oneOf ?? schema.anyOf) as JsonSchema[] | undefined;
  if (members) return fc.oneof(...members.map((member) => validValue(member, context, field)));
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
  return fc.oneof(...types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case 'null': return fc.constant(null);
      case 'boolean': return fc.boolean();
      case 'integer': return numberFor(schema, true);
      case 'number': return numberFor(schema, false);
      case 'array': {
        const minLength = Number(schema.minItems ?? 0);
        return fc.array(validValue(schema.items as JsonSchema, context, field), { minLength, maxLength: Math.max(minLength, Math.min(Number(schema.maxItems ?? 3), 3)) });
      }
      case 'object': {
        const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
        const shape = Object.fromEntries(Object.entries(properties).map(([key, inner]) => [key, validValue(inner, context, key)]));
        return fc.record(shape, { requiredKeys: (schema.required ?? []) as string[] });
      }
      default: {
        const format = FORMATS[schema.format as string];
        if (format) return format;
        const minLength = Math.max(1, Number(schema.minLength ?? 1));
        return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(Number(schema.maxLength ?? 20), 20)) }).filter((text) => text.trim() !== '');
      }
    }
  }));
}

type Path = Array<string | number>;

function pathsOf(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return [path, ...value.flatMap((inner, i) => pathsOf(inner, [...path, i]))];
  if (value !== null && typeof value === 'object') return [path, ...Object.entries(value).flatMap(([key, inner]) => pathsOf(inner, [...path, key]))];
  return [path];
}

const REMOVE = Symbol('remove');

/** `value` with the part at `path` changed; a change to REMOVE drops that field or element. */
function edit(value: unknown, path: Path, change: (old: unknown) => unknown): unknown {
  if (path.length === 0) return change(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((inner, i) => (i === head ? edit(inner, rest, change) : inner)).filter((inner) => inner !== REMOVE);
  return Object.fromEntries(Object.entries(value as object)
    .map(([key, inner]): [string, unknown] => [key, key === head ? edit(inner, rest, change) : inner])
    .filter(([, inner]) => inner !== REMOVE));
}

/** A valid value broken in one place: a field replaced, removed, wrapped in an array, made a very long array, or an unknown field added. */
export function brokenValue(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return valid.chain((value) => fc.record({
    path: fc.constantFrom(...pathsOf(value)),
    how: fc.constantFrom('replace', 'remove', 'wrap', 'long array', 'unknown field'),
    replacement: hostileValue,
    // Longer than any array a route takes, up to the body limit: the same entry many times (built only when used).
    long: fc.tuple(fc.integer({ min: 1_001, max: 150_000 }), hostileScalar),
    key: fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 10 })),
  }).map(({ path, how, replacement, long, key }) => {
    switch (how) {
      case 'replace': return edit(value, path, () => replacement);
      case 'long array': {
        // A long entry (100 KB of text) repeated would only test the body limit: those become 0.
        const entry = toJson(long[1]).length > 64 ? '0' : toJson(long[1]);
        return edit(value, path, () => new Raw(`[${Array(long[0]).fill(entry).join(',')}]`));
      }
      case 'remove': return path.length ? edit(value, path, () => REMOVE) : replacement;
      case 'wrap': return edit(value, path, (old) => [old]);
      default: return edit(value, path, (old) => (old !== null && typeof old === 'object' && !Array.isArray(old)
        ? new Entries([...Object.entries(old), [key, replacement]])
        : replacement));
    }
  }));
}

// --- Query strings

/** Every byte percent-encoded: encodeURIComponent throws on lone surrogates. */
const percentEncoded = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const queryValue = (schema: JsonSchema, context: SchemaContext, name: string): fc.Arbitrary<string> => fc.oneof(
  validValue(schema, context, name).map(String),
  hostileString.map((text) => percentEncoded(text.slice(0, 2000))),
  nasty('', '%', '%ZZ', '%E0%A4%A', '%00', '99999999999999999999999', '-1', '0', '1.5', '1e3', 'NaN', 'true', 'null', '[]', '2026-13-45',
    '2026-02-30T00:00:00Z', '0000-01-01', '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00+25:00', 'AAAA', 'W10', 'WyJjcmVhdGVkX2F0IiwiMjAyNiJd',
    '2020-02-30', '2020-02-31T00:00:00.000Z', '0000-06-01T00:00:00Z', '2026-11-22T24:00:00Z', '10000-01-01T00:00:00Z'),
  cursor,
);

const cursor = fc.tuple(
  fc.constantFrom('created_at', 'updated_at', 'x', 1, null),
  fc.oneof(fc.constantFrom('2026-01-01T00:00:00Z', '0000-01-01', '+275760-09-13T00:00:00Z', '-271821-04-20T00:00:00Z', 'yesterday', 0, 8.64e15,
    '2020-02-31T00:00:00.000Z', '0000-01-01T00:00:00.000Z', '2021-02-29T00:00:00.000Z'), fc.string()),
  fc.oneof(fc.constant(null).map(() => randomUUID()), hostileString, fc.integer()),
).map((parts) => Buffer.from(JSON.stringify(parts)).toString('base64url'));

/** `name=value` pairs for a list route: its parameters (some repeated, some valid) and unknown ones. */
export function queryString(parameters: Array<{ name: string; schema: JsonSchema }>, context: SchemaContext): fc.Arbitrary<string> {
  const names = [...parameters.map((parameter) => parameter.name), 'unknown', '__proto__'];
  const schemaOf = (name: string) => parameters.find((parameter) => parameter.name === name)?.schema ?? { type: 'string' };
  return fc.array(fc.constantFrom(...names).chain((name) => queryValue(schemaOf(name), context, name).map((value) => `${encodeURIComponent(name)}=${value}`)), { maxLength: 6 })
    .map((pairs) => pairs.join('&'));
}
