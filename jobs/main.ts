// `npm run worker`: graphile-worker alone, against DATABASE_URL.
import { loadConfigOrExit, requireDeploymentSettings } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';
import { startWorker } from './worker.ts';

const config = requireDeploymentSettings(loadConfigOrExit(), 'npm run worker');
const logger = createLogger(config.logLevel, 'worker');
const worker = await startWorker(config, config.databaseUrl, logger);
// Before saying it started: whoever waits for that line may send SIGTERM at once, which must find the handler.
onShutdown(logger, config.shutdownTimeoutMs, worker.stop);
logger.info({ concurrency: config.workerConcurrency }, 'worker started');
