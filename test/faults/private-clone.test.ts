// A newcomer clones the project as root into a folder only root can enter (under /root, or any mode-700
// folder) and runs `npm start` and `npm test`: embedded PostgreSQL runs as the postgres system user, who cannot
// reach that folder, so its binaries and data folder must live elsewhere. This clones HEAD (commit first).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { reachableDataDir } from '../../db/embedded.ts';
import { freePort } from '../helpers/database.ts';

const asRoot = process.getuid?.() === 0 ? test.serial : test.serial.skip;
const projectRoot = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();

function privateClone(): string {
  const parent = mkdtempSync(join(tmpdir(), 'stockroom-private-'));
  if ((statSync(parent).mode & 0o777) !== 0o700) throw new Error(`${parent} is not mode 700`);
  const clone = join(parent, 'stockroom');
  execFileSync('git', ['clone', '--quiet', projectRoot, clone]);
  // Hard links: node_modules as `npm ci` would lay it out, inside the private folder, in a fraction of a second.
  try {
    execFileSync('cp', ['-al', join(projectRoot, 'node_modules'), join(clone, 'node_modules')]);
  } catch {
    execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: clone, stdio: 'ignore' });
  }
  return clone;
}

function run(command: string[], cwd: string, env: Record<string, string>) {
  const child = spawn(command[0]!, command.slice(1), { cwd, env: { ...process.env, DATABASE_URL: '', ...env }, detached: true });
  let output = '';
  child.stdout.on('data', (chunk) => { output += chunk; });
  child.stderr.on('data', (chunk) => { output += chunk; });
  // 'close': every process holding its output (npm and the node under it) has exited.
  const exited = once(child, 'close').then(([code]) => code as number | null);
  return { child, exited, output: () => output };
}

asRoot('as root from a mode-700 folder, `npm start` serves /health and prints no stack trace or crontab warning', async (t) => {
  const clone = privateClone();
  t.teardown(() => rmSync(join(clone, '..'), { recursive: true, force: true }));
  t.teardown(() => rmSync(reachableDataDir(join(clone, '.data/postgres')), { recursive: true, force: true }));
  const port = await freePort();
  const started = run(['npm', 'start'], clone, { PORT: String(port), EMBEDDED_PG_PORT: String(await freePort()), LOG_LEVEL: 'info' });
  t.teardown(() => { try { process.kill(-started.child.pid!, 'SIGKILL'); } catch { /* already gone */ } });

  const deadline = Date.now() + 90_000;
  while (!started.output().includes('Stockroom API at') && Date.now() < deadline) {
    if (started.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const health = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status, () => 0);
  process.kill(-started.child.pid!, 'SIGTERM');
  await started.exited;
  const output = started.output();

  t.is(health, 200, output);
  t.regex(output, /using the embedded PostgreSQL in \/var\/lib\/stockroom\/data\//);
  t.notRegex(output, /Failed to read crontab/);
  t.notRegex(output, /^\s+at /m, `no stack trace:\n${output}`);
  // npm itself dies of the signal; the service under it stops in order.
  t.regex(output, /"msg":"stopped"/);
});

asRoot('as root from a mode-700 folder, `npm test` runs (one test file)', async (t) => {
  const clone = privateClone();
  t.teardown(() => rmSync(join(clone, '..'), { recursive: true, force: true }));
  const tested = run(['npm', 'test', '--', 'test/resources.test.ts'], clone, {});
  const code = await tested.exited;
  t.is(code, 0, tested.output());
  t.regex(tested.output(), /tests? passed/);
});
