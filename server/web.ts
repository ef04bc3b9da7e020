import { once } from 'node:events';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import type { Knex } from 'knex';
import type { Config } from '../shared/config.ts';
import { listenForRevocations } from '../db/revocations.ts';
import type { Logger } from '../shared/logger.ts';
import type { AppState } from './framework/context.ts';
import { createApp } from './app.ts';

export interface WebServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish, then closes idle keep-alive connections. */
  close(): Promise<void>;
}

// What Node's HTTP parser refuses before the app sees a request, answered as JSON like every other error.
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time'],
  HPE_HEADER_OVERFLOW: [431, 'The request line and headers are too large (16 KB at most)'],
};

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'Malformed HTTP request'];
  const body = JSON.stringify({ error: message });
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n`
    + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * The HTTP server around the app: a request (headers and body) must arrive within REQUEST_TIMEOUT_MS or the
 * connection is answered 408 and closed, so that clients sending a byte at a time cannot hold connections.
 */
export function createHttpServer(app: Koa<AppState>, config: Pick<Config, 'requestTimeoutMs'>): Server {
  const server = createServer({
    requestTimeout: config.requestTimeoutMs,
    headersTimeout: Math.min(config.requestTimeoutMs, 60_000),
    // Node looks for expired requests at this interval (30 s by default), which would stretch short timeouts.
    connectionsCheckingInterval: Math.min(1000, config.requestTimeoutMs),
  }, app.callback());
  server.on('clientError', answerClientError);
  return server;
}

/** The API on `config.port`, listening for key revocations on `connectionString` (the database of `db`). */
export async function startWebServer(config: Config, db: Knex, logger: Logger, connectionString: string): Promise<WebServer> {
  const revocations = listenForRevocations(connectionString, logger);
  const server = createHttpServer(createApp({ db, config, logger }), config).listen(config.port, config.host);
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
        await revocations.close();
      }
    },
  };
}
