// The real entry points (`npm run web`, `npm run worker`) started as child processes against a test database.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { TEST_KEY } from './harness.ts';

export { TEST_KEY };

export interface Started {
  child: ChildProcess;
  /** Every line it wrote, stdout and stderr. */
  lines: string[];
  exited: Promise<number | null>;
  /** The JSON log line that said it was ready. */
  readyLine: Record<string, unknown>;
}

/** Starts an entry point and waits for the JSON log line whose msg is `ready`. */
export async function startProcess(script: string, ready: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, ENCRYPTION_KEY: TEST_KEY, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
  });
  const lines: string[] = [];
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const readyLine = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk) => {
      buffer += chunk;
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        lines.push(line);
        if (line.startsWith('{') && JSON.parse(line).msg === ready) resolve(JSON.parse(line));
      }
    });
    child.stderr!.on('data', (chunk) => lines.push(String(chunk)));
    void exited.then((code) => reject(new Error(`${script} exited with ${code} before it was ready: ${lines.join('\n')}`)));
  });
  return { child, lines, exited, readyLine };
}
