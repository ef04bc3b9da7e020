// `npm run web`: the API alone, against DATABASE_URL.
import { createDb } from '../db/knex.ts';
import { checkDatabase, startOrExit } from '../db/startup.ts';
import { loadConfig, requireDeploymentSettings } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';
import { startWebServer } from './web.ts';

await startOrExit(async () => {
  const config = requireDeploymentSettings(loadConfig(), 'npm run web');
  await checkDatabase(config.databaseUrl, { migrated: true });
  const logger = createLogger(config.logLevel, 'web');
  const db = createDb(config.databaseUrl, config.dbPoolMax, logger);
  const web = await startWebServer(config, db, logger, config.databaseUrl);
  // Before saying it listens: whoever waits for that line may send SIGTERM at once, which must find the handler.
  onShutdown(logger, config.shutdownTimeoutMs, web.close, () => db.destroy());
  logger.info({ port: web.port }, 'web listening');
});
