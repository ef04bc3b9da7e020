// Throw-away PostgreSQL for test runs: DATABASE_URL's server, or an embedded one in a temporary folder.
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { connectionSettings } from '../../db/connection.ts';
import { startEmbeddedPostgres } from '../../db/embedded.ts';

export interface ScratchServer {
  /** Connects to the server's maintenance database; databases are created and dropped through it. */
  adminUrl: string;
  /** Whether this run started the server (and stop() shuts it down). */
  embedded: boolean;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function startScratchServer(label: string): Promise<ScratchServer> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL, embedded: false, stop: async () => {} };
  const server = await startEmbeddedPostgres({
    dataDir: join(tmpdir(), `stockroom-${label}-${process.pid}-${Date.now()}`),
    port: await freePort(),
    durable: false,
  });
  return { adminUrl: server.urlFor('postgres'), embedded: true, stop: () => server.stop() };
}

async function admin(adminUrl: string, run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client(await connectionSettings(adminUrl));
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** Creates the database afresh (a copy of `template` when given) and returns its connection string. */
export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<string> {
  await admin(adminUrl, async (client) => {
    const ident = client.escapeIdentifier(name);
    await client.query(`drop database if exists ${ident} with (force)`);
    await client.query(`create database ${ident}${template ? ` template ${client.escapeIdentifier(template)}` : ''}`);
  });
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await admin(adminUrl, (client) => client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`));
}
