// `npm run worker`: graphile-worker alone, against DATABASE_URL.
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';
import { startWorker } from './worker.ts';

const config = loadConfigOrExit();
const logger = createLogger(config.logLevel, 'worker');
if (!config.databaseUrl) {
  logger.fatal('DATABASE_URL is not set. `npm run worker` needs a database; `npm start` runs an embedded one.');
  process.exit(1);
}
const worker = await startWorker(config, config.databaseUrl, logger);
logger.info({ concurrency: config.workerConcurrency }, 'worker started');
onShutdown(logger, config.shutdownTimeoutMs, worker.stop);
