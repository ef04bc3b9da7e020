// What a fulfilment or a receipt takes from each line of its order: the parts the caller asked for, or everything
// that remains. A line named twice or not on the order is the caller's mistake, named with the body's other problems
// in one 400 (checkOrderLines); more than a line has left is a conflict with the order as it stands (409 naming every
// such line and what it has left).
import type { Knex } from 'knex';
import { fromMicros, toMicros } from '../../shared/decimal.ts';
import { ConflictError, type Problem } from '../../shared/errors.ts';
import { isRecord, isUuid } from '../../shared/guards.ts';
import { withChildren, type OwnedRow } from './crud.ts';
import { fetchPage, type PageRequest } from './pagination.ts';
import type { Statement } from '../../db/statement.ts';

export interface OrderLine {
  id: string;
  item_id: string;
  quantity: number;
}

export interface LinePart<Line extends OrderLine> {
  line: Line;
  quantity: number;
}

export interface PartsSpec<Line extends OrderLine> {
  /** How a part names its line in the body: `lineItemId`, `lineId`. */
  field: string;
  /** What the operation does to a line, for messages: `fulfil`, `receive`. */
  verb: string;
  /** What the line has already had: fulfilled, received. */
  done: (line: Line) => number;
}

/** What a line still has to go, in millionths. */
const remainingOf = <Line extends OrderLine>(line: Line, spec: PartsSpec<Line>) => toMicros(line.quantity) - toMicros(spec.done(line));

export function lineParts<Line extends OrderLine>(
  lines: Line[],
  asked: ReadonlyArray<Record<string, unknown> & { quantity: number }> | undefined,
  spec: PartsSpec<Line>,
): Array<LinePart<Line>> {
  if (asked === undefined) {
    return lines.flatMap((line) => {
      const remaining = remainingOf(line, spec);
      return remaining > 0n ? [{ line, quantity: fromMicros(remaining) }] : [];
    });
  }
  const byId = new Map(lines.map((line) => [line.id, line]));
  const parts = asked.map((part) => {
    const line = byId.get(String(part[spec.field]));
    if (!line) throw new Error(`lineParts: ${spec.field} ${String(part[spec.field])} was not checked (see checkOrderLines)`);
    return { line, quantity: part.quantity };
  });
  const remainders = parts
    .filter((part) => toMicros(part.quantity) > remainingOf(part.line, spec))
    .map((part) => ({ [spec.field]: part.line.id, itemId: part.line.item_id, requested: part.quantity, remaining: fromMicros(remainingOf(part.line, spec)) }));
  if (remainders.length) {
    const [first] = remainders;
    const message = remainders.length === 1
      ? `Line ${first![spec.field]} has ${first!.remaining} left to ${spec.verb}, ${first!.requested} asked: nothing was changed`
      : `${remainders.length} lines are asked for more than they have left to ${spec.verb}: nothing was changed (see \`remainders\`)`;
    throw new ConflictError(message, { remainders });
  }
  return parts;
}

/**
 * A route's `resolve` for a body whose `lines` name lines of the order at `{id}` by `tables.field`: every line the
 * order does not have, and every line named twice. An order that does not exist is left to the handler's 404.
 * Order lines never change once created, so what is checked here holds in the handler's transaction.
 */
export function checkOrderLines(tables: Pick<PartRecordTables, 'orderLines' | 'orderId' | 'field'>) {
  return async ({ db, auth, body, params }: { db: Knex; auth: { accountId: string }; body: unknown; params: Record<string, string> }) => {
    const asked = isRecord(body) && Array.isArray(body.lines) ? body.lines : [];
    const named = asked.flatMap((part, index) => {
      const id = isRecord(part) ? part[tables.field] : undefined;
      return typeof id === 'string' ? [{ id, index }] : [];
    });
    if (named.length === 0 || !isUuid(params.id ?? '')) return { problems: [], resolved: undefined };
    const rows: Array<{ id: string }> = await db(tables.orderLines).where({ account_id: auth.accountId, [tables.orderId]: params.id }).select('id');
    if (rows.length === 0) return { problems: [], resolved: undefined };
    const lines = new Set(rows.map((row) => row.id));
    const seen = new Map<string, number>();
    const problems: Problem[] = [];
    for (const { id, index } of named) {
      const path = `lines[${index}].${tables.field}`;
      if (!lines.has(id)) problems.push({ path, message: 'is not a line of this order' });
      else if (seen.has(id)) problems.push({ path, message: `names the same line as lines[${seen.get(id)}]: send each line once` });
      else seen.set(id, index);
    }
    return { problems, resolved: undefined };
  };
}

/** Whether every line has had all of its quantity, once `parts` are added; and whether any line has had anything. */
export function completion<Line extends OrderLine>(lines: Line[], parts: Array<LinePart<Line>>, done: (line: Line) => number): { complete: boolean; started: boolean } {
  const added = new Map<string, bigint>();
  for (const part of parts) added.set(part.line.id, (added.get(part.line.id) ?? 0n) + toMicros(part.quantity));
  const had = lines.map((line) => toMicros(done(line)) + (added.get(line.id) ?? 0n));
  return { complete: lines.every((line, index) => had[index] === toMicros(line.quantity)), started: had.some((micros) => micros > 0n) };
}

// --- Stored: a record (a fulfilment, a receipt) of an order at a location, with its lines, each part of one order
// line; the order line keeps the sum of its parts.

export interface PartRecordTables {
  records: string;
  lines: string;
  /** The record's key in its lines. */
  recordId: string;
  /** The order's key in the records. */
  orderId: string;
  orderLines: string;
  /** The order line's key in the records' lines. */
  orderLineId: string;
  /** What the order line keeps of its parts. */
  done: string;
  /** How a record's line names its order line in the API. */
  field: string;
}

export interface PartRecordRow extends OwnedRow {
  location_id: string;
  reference: string | null;
  created_by: string;
  /** `[{<field>, itemId, quantity}]`, in the order sent. */
  lines: Array<Record<string, string | number>>;
}

/** The lines of record `r` as the API shows them, as JSON. */
export const partLinesJson = (tables: PartRecordTables): string => `(select json_agg(json_build_object('${tables.field}', rl.${tables.orderLineId},
  'itemId', rl.item_id, 'quantity', rl.quantity) order by rl.position) from ${tables.lines} rl where rl.${tables.recordId} = r.id)`;

/** The records with their lines as the API shows them: one query for any number. */
function partRecordsQuery(db: Knex, accountId: string, tables: PartRecordTables): Knex.QueryBuilder {
  return db(`${tables.records} as r`).where('r.account_id', accountId).select('r.*', db.raw(`${partLinesJson(tables)} as lines`));
}

/** The orders, each with its records under `key`, oldest first: one query whatever their number. */
export function withPartRecords<Order extends { id: string }, Row extends PartRecordRow, Key extends string>(
  db: Knex, accountId: string, orders: Order[], tables: PartRecordTables, key: Key,
): Promise<Array<Order & Record<Key, Row[]>>> {
  return withChildren(orders, key, (ids): Promise<Row[]> =>
    partRecordsQuery(db, accountId, tables).whereIn(`r.${tables.orderId}`, ids)
      .orderBy([{ column: `r.${tables.orderId}` }, { column: 'r.created_at' }, { column: 'r.id' }]),
  (row) => (row as unknown as Record<string, string>)[tables.orderId]!);
}

/** A page of one order's records. */
export function listPartRecords<Row extends PartRecordRow>(db: Knex, accountId: string, tables: PartRecordTables, orderId: string, page: PageRequest): Promise<Row[]> {
  return fetchPage<Row>(partRecordsQuery(db, accountId, tables).where(`r.${tables.orderId}`, orderId), 'r', page);
}

export interface NewPartRecord<Line extends OrderLine> {
  id: string;
  orderId: string;
  locationId: string;
  reference: string | null;
  parts: Array<LinePart<Line>>;
}

/**
 * The CTEs that write the record, its lines, and what each order line has had, for a statement of the caller's:
 * every write holds to `gate`, a condition over the statement's other CTEs. Tables and columns are `tables`' own.
 */
export function partRecordCtes<Line extends OrderLine>(
  q: Statement,
  accountId: string,
  userId: string,
  tables: PartRecordTables,
  record: NewPartRecord<Line>,
  gate = 'true',
): string[] {
  const a = q.param(accountId, 'uuid');
  const lineIds = q.column(record.parts, (part) => part.line.id, 'uuid');
  const quantities = q.column(record.parts, (part) => String(part.quantity), 'numeric');
  return [
    `pr as (insert into ${tables.records} (id, account_id, ${tables.orderId}, location_id, reference, created_by)
       select ${q.param(record.id, 'uuid')}, ${a}, ${q.param(record.orderId, 'uuid')}, ${q.param(record.locationId, 'uuid')},
         ${q.param(record.reference, 'text')}, ${q.param(userId, 'uuid')} where ${gate}
       returning id)`,
    `prl as (insert into ${tables.lines} (account_id, ${tables.recordId}, position, ${tables.orderLineId}, item_id, quantity)
       select ${a}, pr.id, p.n - 1, p.line_id, p.item_id, p.quantity
       from pr, unnest(${lineIds}, ${q.column(record.parts, (part) => part.line.item_id, 'uuid')}, ${quantities})
         with ordinality as p(line_id, item_id, quantity, n))`,
    `pol as (update ${tables.orderLines} l set ${tables.done} = l.${tables.done} + p.quantity, updated_at = now()
       from unnest(${lineIds}, ${quantities}) as p(line_id, quantity)
       where l.account_id = ${a} and l.id = p.line_id and ${gate})`,
  ];
}

/** `record` as it reads back once stored at `now` (a string standing for its statement's time), for the order's record after it. */
export function storedPartRecord<Line extends OrderLine, Row extends PartRecordRow>(
  tables: PartRecordTables,
  auth: { accountId: string; userId: string },
  record: NewPartRecord<Line>,
  now: string,
): Row {
  return {
    id: record.id, account_id: auth.accountId, [tables.orderId]: record.orderId, location_id: record.locationId, reference: record.reference,
    created_by: auth.userId, created_at: now, updated_at: now,
    lines: record.parts.map((part) => ({ [tables.field]: part.line.id, itemId: part.line.item_id, quantity: part.quantity })),
  } as unknown as Row;
}

/** What each line has had (`tables.done`) once `parts` are added. */
export function linesAfter<Line extends OrderLine>(lines: Line[], parts: Array<LinePart<Line>>, tables: Pick<PartRecordTables, 'done'>): Line[] {
  const added = new Map<string, bigint>();
  for (const part of parts) added.set(part.line.id, (added.get(part.line.id) ?? 0n) + toMicros(part.quantity));
  const done = (line: Line) => toMicros((line as unknown as Record<string, number>)[tables.done]!);
  return lines.map((line) => (added.has(line.id) ? { ...line, [tables.done]: fromMicros(done(line) + added.get(line.id)!) } : line));
}
