import type { Logger } from './logger.ts';

/**
 * On SIGTERM or SIGINT, runs the closers in order and exits. A second signal, or the timeout, exits at once:
 * the platform will SIGKILL soon after anyway.
 */
export function onShutdown(logger: Logger, timeoutMs: number, ...closers: Array<() => Promise<void>>): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out: exiting');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    try {
      for (const close of closers) await close();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
