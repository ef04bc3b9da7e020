import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '../db/knex.ts';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { createApp } from './app.ts';

export interface WebServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish, then closes idle keep-alive connections. */
  close(): Promise<void>;
}

export async function startWebServer(config: Config, db: Db, logger: Logger): Promise<WebServer> {
  const app = createApp({ db, config, logger });
  const server = app.listen(config.port, config.host);
  await once(server, 'listening');
  let closing = false;
  // A request that arrives on a kept-alive connection during the shutdown is answered with Connection: close.
  server.prependListener('request', (_request, response) => { if (closing) response.shouldKeepAlive = false; });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      closing = true;
      const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
      // Connections busy when the shutdown began keep their keep-alive: close each as soon as it falls idle,
      // rather than waiting out the keep-alive timeout.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      server.closeIdleConnections();
      try {
        await closed;
      } finally {
        clearInterval(sweep);
      }
    },
  };
}
