import { pino, type Logger } from 'pino';

export type { Logger };

// Keys, secrets and Authorization values must never reach the logs, whatever object carries them.
const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  'key',
  'secret',
  '*.key',
  '*.secret',
  '*.apiKey',
  '*.password',
];

export function createLogger(level: string, name?: string, destination?: NodeJS.WritableStream): Logger {
  const options = { level, name, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
