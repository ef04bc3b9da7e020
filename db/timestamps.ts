// timestamptz columns reach our code as the API writes them (ISO 8601, UTC, milliseconds: what toISOString
// gives), cut from PostgreSQL's own text. Parsing each into a Date only to print it again took a fifth of a
// list's CPU. Our connections run with TimeZone=UTC, so the text always ends in +00.
import pg from 'pg';

/** An instant as `2026-11-22T09:30:00.000Z`. */
export type Timestamp = string;

const parseWithPg = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);

/** `2026-11-22 09:30:00.12+00` to `2026-11-22T09:30:00.120Z`; any other form (an offset, years past 9999) via a Date. */
export function isoTimestamp(text: string): Timestamp {
  if (text.length >= 22 && text.length <= 29 && text[4] === '-' && text[10] === ' ' && text.endsWith('+00')) {
    const fraction = text.length > 22 ? text.slice(20, -3) : '';
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction.length >= 3 ? fraction.slice(0, 3) : fraction.padEnd(3, '0')}Z`;
  }
  const parsed: unknown = parseWithPg(text);
  return parsed instanceof Date && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : text;
}

/** isoTimestamp in SQL, over a timestamptz expression: for JSON a statement builds itself. */
export const isoTimestampSql = (expression: string): string => `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The type parsers of our connections: pg's own, but timestamptz as an ISO string. */
export const connectionTypes = {
  getTypeParser(oid: number, format?: string) {
    if (format === 'binary') return pg.types.getTypeParser(oid, 'binary');
    return oid === pg.types.builtins.TIMESTAMPTZ ? isoTimestamp : pg.types.getTypeParser(oid, 'text');
  },
};
