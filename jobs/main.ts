// `npm run worker`: graphile-worker alone, against DATABASE_URL.
import { checkDatabase, startOrExit } from '../db/startup.ts';
import { loadConfig, requireDeploymentSettings } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';
import { startWorker } from './worker.ts';

await startOrExit(async () => {
  const config = requireDeploymentSettings(loadConfig(), 'npm run worker');
  // Checked before graphile-worker starts, which would otherwise retry a wrong password or host forever.
  await checkDatabase(config.databaseUrl, { migrated: true });
  const logger = createLogger(config.logLevel, 'worker');
  const worker = await startWorker(config, config.databaseUrl, logger);
  // Before saying it started: whoever waits for that line may send SIGTERM at once, which must find the handler.
  onShutdown(logger, config.shutdownTimeoutMs, worker.stop);
  logger.info({ concurrency: config.workerConcurrency }, 'worker started');
});
