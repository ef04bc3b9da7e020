// `npm run web`: the API alone, against DATABASE_URL.
import { createDb } from '../db/knex.ts';
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';
import { startWebServer } from './web.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'web');
if (!config.databaseUrl) {
  logger.fatal('DATABASE_URL is not set. `npm run web` needs a database; `npm start` runs an embedded one.');
  process.exit(1);
}
const db = createDb(config.databaseUrl, config.dbPoolMax);
const web = await startWebServer(config, db, logger);
logger.info({ port: web.port }, 'web listening');
onShutdown(logger, config.shutdownTimeoutMs, web.close, () => db.destroy());
