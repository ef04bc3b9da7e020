// `npm run migrate` (and the Procfile's release phase): our schema, then graphile-worker's.
import { loadConfig, ConfigError } from '../shared/config.ts';
import { migrateLatest } from './migrations/index.ts';
import { checkDatabase, startOrExit } from './startup.ts';

const applied = await startOrExit(async () => {
  const { databaseUrl } = loadConfig();
  if (!databaseUrl) throw new ConfigError('DATABASE_URL is not set: `npm run migrate` needs a database; `npm start` migrates its embedded one');
  await checkDatabase(databaseUrl, { migrated: false });
  return migrateLatest(databaseUrl);
});
process.stdout.write(applied.length ? `Applied migrations: ${applied.join(', ')}\n` : 'Database schema is up to date.\n');
