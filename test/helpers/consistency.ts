// `npm run check:consistency` as an operator runs it, against a test file's database.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export async function runConsistencyCheck(databaseUrl: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['bin/check-consistency.ts'], { env: { ...process.env, DATABASE_URL: databaseUrl } });
  let output = '';
  child.stdout.on('data', (chunk) => { output += chunk; });
  child.stderr.on('data', (chunk) => { output += chunk; });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}
