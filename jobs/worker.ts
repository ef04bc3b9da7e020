import { run, type Runner } from 'graphile-worker';
import type { Config } from '../shared/config.ts';
import { toWorkerLogger, type Logger } from '../shared/logger.ts';
import { taskList } from './tasks.ts';

export interface Worker {
  /** Stops taking jobs and waits for the running ones; unfinished jobs are released for another worker. */
  stop(): Promise<void>;
}

export async function startWorker(config: Config, connectionString: string, logger: Logger): Promise<Worker> {
  const runner: Runner = await run({
    connectionString,
    concurrency: config.workerConcurrency,
    // Signals are handled by our own shutdown so that the worker stops before the database pool closes.
    noHandleSignals: true,
    logger: toWorkerLogger(logger),
    taskList,
    // No recurring jobs: without this graphile-worker looks for a ./crontab file.
    crontab: '',
  });
  return { stop: () => runner.stop() };
}
