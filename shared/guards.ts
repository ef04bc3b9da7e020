// Checks on values whose type is not known yet: request bodies as sent, ids from a URL, job payloads that older
// code may have enqueued.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether an id can name a record at all: a malformed one is "not found", never a database error. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A plain JSON object: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
