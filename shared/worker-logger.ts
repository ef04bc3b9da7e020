// Apart from shared/logger.ts so that the web process, which never runs jobs, does not load graphile-worker (and
// its configuration loader): about 6 MB of its resident memory.
import { Logger as WorkerLogger } from 'graphile-worker';
import type { Logger } from './logger.ts';

// graphile-worker reports every job it completes at info: at thousands of deliveries a second that is noise, so
// its info goes to debug; warnings and errors (failed jobs) stay.
const WORKER_LEVELS = { error: 'error', warning: 'warn', info: 'debug', debug: 'debug' } as const;

/** graphile-worker logs through its own interface; route it into pino so both processes log one JSON format. */
export function toWorkerLogger(logger: Logger): WorkerLogger {
  return new WorkerLogger((scope) => {
    const child = logger.child(scope);
    return (level, message, meta) => {
      child[WORKER_LEVELS[level] ?? 'info'](meta ?? {}, message);
    };
  });
}
