// Key revocations, announced to every web process: revokeApiKey notifies REVOKED_CHANNEL in the statement that
// revokes (PostgreSQL delivers it at commit), and each web process listens on a connection of its own and forgets
// the key at once. Until that connection is up, and whenever it is lost (a database restart), the process trusts no
// cached key: every request looks its key up, so a revocation it could not hear about still holds.
import pg from 'pg';
import type { Logger } from '../shared/logger.ts';
import { connectionSettings } from './connection.ts';
import { forgetKey, REVOKED_CHANNEL, trustKeyCache } from './accounts.ts';

const RETRY_MS = [100, 250, 500, 1000, 2000];

export interface RevocationListener {
  close(): Promise<void>;
}

export function listenForRevocations(connectionString: string, logger: Logger): RevocationListener {
  trustKeyCache(false);
  let current: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  let lostSince: number | undefined;
  let retry: NodeJS.Timeout | undefined;

  const reconnect = () => {
    if (closed || retry) return;
    retry = setTimeout(() => { retry = undefined; void connect(); }, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]);
    retry.unref();
    attempt += 1;
  };

  const lose = (client: pg.Client, error?: Error) => {
    if (client !== current) return;
    current = undefined;
    client.end().catch(() => {});
    lost(error);
  };

  const lost = (error?: Error) => {
    trustKeyCache(false);
    // Said once per loss, not once per failed attempt to get it back.
    if (!closed && lostSince === undefined) {
      lostSince = Date.now();
      logger.warn({ err: error }, 'key revocations: lost the listening connection; every request looks its key up until it is back');
    }
    reconnect();
  };

  async function connect(): Promise<void> {
    let settings: pg.ClientConfig;
    try {
      settings = await connectionSettings(connectionString);
    } catch (error) {
      return lost(error as Error);
    }
    const client = new pg.Client(settings);
    client.on('error', (error) => lose(client, error));
    client.on('end', () => lose(client));
    client.on('notification', (message) => { if (message.payload) forgetKey(message.payload); });
    try {
      current = client;
      await client.connect();
      await client.query(`listen ${REVOKED_CHANNEL}`);
      if (closed) {
        await client.end();
        return;
      }
      attempt = 0;
      trustKeyCache(true);
      if (lostSince !== undefined) logger.info({ downMs: Date.now() - lostSince }, 'key revocations: listening again');
      lostSince = undefined;
    } catch (error) {
      if (current === client) lose(client, error as Error);
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const client = current;
      current = undefined;
      await client?.end().catch(() => {});
    },
  };
}
