// A throw-away PostgreSQL that accepts only TLS, with a certificate no public authority signed: what Heroku
// Postgres and most managed servers look like to a client. Its authority's certificate is given to the tests
// that verify, and a second authority's to show a wrong one refused.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../../db/embedded.ts';
import { freePort } from './database.ts';

export interface TlsServer {
  /** A URL for `database` as a managed platform gives it (no sslmode), with `params` appended. */
  url(database: string, params?: Record<string, string>): string;
  /** The certificate of the authority that signed the server's. */
  caFile: string;
  /** Another authority's certificate: verifying against it must fail. */
  otherCaFile: string;
  port: number;
  stop(): Promise<void>;
}

const openssl = (dir: string, ...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

function makeCertificates(dir: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, 'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=Stockroom test CA');
  openssl(dir, 'req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '2', '-subj', '/CN=Someone else');
  openssl(dir, 'req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(dir, 'x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext');
}

const PASSWORD = 'stockroom-local';

export async function startTlsOnlyPostgres(): Promise<TlsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'stockroom-tls-'));
  // Run as root, the server runs as the postgres user, who must read this folder, own the key and read the rules.
  chmodSync(dir, 0o755);
  makeCertificates(dir);
  writeFileSync(join(dir, 'pg_hba.conf'), 'hostssl all all 127.0.0.1/32 scram-sha-256\nhostssl all all ::1/128 scram-sha-256\n');
  chmodSync(join(dir, 'server.key'), 0o600);
  if (process.getuid?.() === 0) {
    const [uid, gid] = ['-u', '-g'].map((flag) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' })));
    for (const file of ['server.key', 'server.crt', 'pg_hba.conf']) chownSync(join(dir, file), uid!, gid!);
  }
  const port = await freePort();
  const server = await startEmbeddedPostgres({
    dataDir: join(dir, 'data'),
    port,
    durable: false,
    postgresFlags: [
      '-c', 'ssl=on', '-c', `ssl_cert_file=${join(dir, 'server.crt')}`, '-c', `ssl_key_file=${join(dir, 'server.key')}`,
      '-c', `hba_file=${join(dir, 'pg_hba.conf')}`,
    ],
  });
  return {
    url: (database, params = {}) => {
      const query = new URLSearchParams(params).toString();
      return `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}${query ? `?${query}` : ''}`;
    },
    caFile: join(dir, 'ca.crt'),
    otherCaFile: join(dir, 'other-ca.crt'),
    port,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
