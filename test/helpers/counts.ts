// Row counts of every table of the database (ours and graphile-worker's jobs), in one statement: what a request
// that was refused or replayed must leave exactly as it was. The rate limit counters are left out: every request
// with a key is counted, whatever it asked.
import type { Knex } from 'knex';

const tableNames = new WeakMap<Knex, Promise<string[]>>();

async function tables(db: Knex): Promise<string[]> {
  let names = tableNames.get(db);
  if (!names) {
    names = db.raw(`select format('%I.%I', schemaname, tablename) as name from pg_tables
                    where schemaname = 'public' and tablename not like 'knex_%' and tablename <> 'rate_limits' order by tablename`)
      .then(({ rows }: { rows: Array<{ name: string }> }) => [...rows.map((row) => row.name), 'graphile_worker.jobs']);
    tableNames.set(db, names);
  }
  return names;
}

export async function tableCounts(db: Knex): Promise<Record<string, number>> {
  const names = await tables(db);
  const { rows } = await db.raw(`select ${names.map((name, i) => `(select count(*)::int from ${name}) as c${i}`).join(', ')}`);
  return Object.fromEntries(names.map((name, i) => [name, rows[0][`c${i}`] as number]));
}
