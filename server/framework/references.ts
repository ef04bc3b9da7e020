// Checks that the records a request body names belong to the caller's account, naming every one that does not.
import type { Knex } from 'knex';
import { isUuid } from '../../shared/accounts.ts';
import { ValidationError, type Problem } from './errors.ts';

export interface Reference {
  table: 'items' | 'locations' | 'customers';
  id: string;
  /** Where the id stands in the body: `lineItems[0].itemId`. */
  path: string;
}

const LABELS = { items: 'item', locations: 'location', customers: 'customer' } as const;

/** A 400 naming every reference that is not a record of the account. */
export async function requireReferences(db: Knex, accountId: string, references: Reference[]): Promise<void> {
  const problems = await missingReferences(db, accountId, references);
  if (problems.length) throw new ValidationError(problems);
}

/** The problems requireReferences would report, for callers that collect problems of their own as well. */
export async function missingReferences(db: Knex, accountId: string, references: Reference[]): Promise<Problem[]> {
  const found = new Set<string>();
  const tables = [...new Set(references.map((ref) => ref.table))];
  for (const table of tables) {
    const ids = [...new Set(references.filter((ref) => ref.table === table && isUuid(ref.id)).map((ref) => ref.id))];
    if (ids.length === 0) continue;
    const rows: Array<{ id: string }> = await db(table).where({ account_id: accountId }).whereIn('id', ids).select('id');
    for (const row of rows) found.add(`${table}:${row.id}`);
  }
  return references
    .filter((ref) => !found.has(`${ref.table}:${ref.id}`))
    .map((ref) => ({ path: ref.path, message: `no ${LABELS[ref.table]} with this id in your account` }));
}
