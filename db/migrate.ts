// `npm run migrate` (and the Procfile's release phase): our schema, then graphile-worker's.
import { loadConfigOrExit } from '../shared/config.ts';
import { migrateLatest } from './migrations/index.ts';

const config = loadConfigOrExit();
if (!config.databaseUrl) {
  process.stderr.write('DATABASE_URL is not set. `npm run migrate` needs a database; `npm start` migrates its embedded one.\n');
  process.exit(1);
}
const applied = await migrateLatest(config.databaseUrl);
process.stdout.write(applied.length ? `Applied migrations: ${applied.join(', ')}\n` : 'Database schema is up to date.\n');
