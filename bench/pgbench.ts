// The ceiling of `npm run bench`: pgbench's TPC-B (five statements a transaction: three updates, a select, an
// insert; 50 clients, scale 10) against the same PostgreSQL in the same run, when pgbench is installed. What the
// server does for a transaction of about our writes' size with nothing but the protocol in between.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createDatabase, dropDatabase } from '../test/helpers/database.ts';

const run = promisify(execFile);

export interface PgbenchFigures {
  tps: number;
  clients: number;
  scale: number;
  seconds: number;
  version: string;
}

/** TPC-B for `seconds` with `clients` connections on a database of its own; null when pgbench is not installed. */
export async function runPgbench(adminUrl: string, options: { clients: number; seconds: number; scale?: number }): Promise<PgbenchFigures | null> {
  const version = await run('pgbench', ['--version']).then(({ stdout }) => stdout.trim(), () => null);
  if (!version) return null;
  const scale = options.scale ?? 10;
  const name = `stockroom_pgbench_${process.pid}`;
  // libpq reads the connection string itself; TLS and the rest as the URL says.
  const url = await createDatabase(adminUrl, name);
  try {
    await run('pgbench', ['-i', '-q', '-s', String(scale), url]);
    const { stdout } = await run('pgbench', [
      '-c', String(options.clients), '-j', '2', '-T', String(options.seconds), url,
    ], { maxBuffer: 16 * 1024 * 1024 });
    const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`pgbench printed no tps:\n${stdout}`);
    return { tps: Math.round(tps), clients: options.clients, scale, seconds: options.seconds, version };
  } finally {
    await dropDatabase(adminUrl, name);
  }
}
