// One statement, one round trip. The writes that run most (stock changes with their records, events and jobs) are
// each one statement of data-modifying CTEs, sent straight through pg on the connection knex holds (the caller's
// transaction, or a pooled connection where the statement is its own transaction) as a named prepared statement:
// PostgreSQL parses and plans its text once per connection, not on every request.
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type pg from 'pg';
import { isoTimestampSql } from './timestamps.ts';

/** A statement's text with numbered parameters, built by appending: `param` places a value and answers `$n::type`. */
export class Statement {
  readonly values: unknown[] = [];

  /** `$n::type` for `value`: one parameter per call, in the order of the calls (so a statement's text is stable). */
  param(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }

  /**
   * `param`, placed when first used: for a value that only some shapes of a text use (PostgreSQL cannot type a
   * parameter its text does not use, and refuses the statement).
   */
  once(value: unknown, type: string): () => string {
    let placed: string | undefined;
    return () => (placed ??= this.param(value, type));
  }

  /** One array parameter of `rows` mapped by `value`: what `unnest` takes apart again. */
  column<T>(rows: readonly T[], value: (row: T) => unknown, type: string): string {
    return this.param(rows.map(value), `${type}[]`);
  }
}

// The names of the statements prepared so far, by text (texts are few: one per shape of a write, not per request).
const names = new Map<string, string>();

const nameOf = (text: string): string => {
  let name = names.get(text);
  if (!name) {
    name = `stockroom_${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
    names.set(text, name);
  }
  return name;
};

/**
 * Runs `text` with the statement's values on `db`'s connection: the transaction's when `db` is one, else a pooled
 * connection on which it commits alone (one statement needs no BEGIN and COMMIT of its own).
 */
export async function runStatement<Row>(db: Knex, statement: Statement, text: string): Promise<Row[]> {
  const connection = await db.client.acquireConnection() as pg.Client;
  try {
    const result = await connection.query<Row & pg.QueryResultRow>({ name: nameOf(text), text, values: statement.values });
    return result.rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * A statement's rows of `from` (a CTE) as one JSON array in `order`, to come back in its answer beside other
 * things: columns as pg hands them (numbers as numbers), `created_at` and `updated_at` as isoTimestamp writes them.
 */
export const rowsJson = (from: string, order: string): string => `(select coalesce(json_agg(to_jsonb(x) || jsonb_build_object(
    'created_at', ${isoTimestampSql('x.created_at')}, 'updated_at', ${isoTimestampSql('x.updated_at')}) order by ${order}), '[]') from ${from} x)`;

/**
 * A record built before its statement ran, as JSON in its own key order, with what the statement decides filled
 * in: each blank of `fills` (a string nobody can have sent, wherever the record holds that value) replaced by its
 * SQL expression's value.
 */
export const filledJson = (statement: Statement, record: unknown, fills: Record<string, string>): string =>
  `${Object.entries(fills).reduce((text, [blank, value]) => `replace(${text}, ${statement.param(JSON.stringify(blank), 'text')}, to_json(${value})::text)`,
    statement.param(JSON.stringify(record), 'text'))}::json`;

/** Where a statement stopped itself (stockroom_stop, migration 017): its reason and detail. */
export interface Stop {
  reason: string;
  detail: unknown;
}

/** The Stop `error` is, if it is one. */
export function stopOf(error: unknown): Stop | undefined {
  const { code, message, detail } = error as { code?: string; message?: string; detail?: string };
  return code === 'SR000' ? { reason: message!, detail: JSON.parse(detail!) } : undefined;
}

/** SQL that stops the statement (when evaluated) with `reason` and `detail`, an expression of type jsonb. */
export const stopSql = (statement: Statement, reason: string, detail: string): string =>
  `stockroom_stop(${statement.param(reason, 'text')}, ${detail})`;
