// The processes a bench loads: started as the Procfile (or a script) says, waited for, stopped, and their memory
// read from /proc (Linux; elsewhere the figures are missing, not wrong).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { freePort } from '../test/helpers/database.ts';

/** The arguments after `node` on a line of the Procfile: ours runs as production runs it, V8 flags included. */
export async function procfileArgs(type: 'web' | 'worker'): Promise<string[]> {
  return new RegExp(`^${type}:\\s*node\\s+(.+)$`, 'm').exec(await readFile('Procfile', 'utf8'))![1]!.trim().split(/\s+/);
}

/** A field of /proc/<pid>/status in MB: VmRSS (now) or VmHWM (the peak so far); null where /proc is not there. */
async function statusMb(pid: number | undefined, field: 'VmRSS' | 'VmHWM'): Promise<number | null> {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+)`).exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

export const currentRssMb = (pid: number | undefined) => statusMb(pid, 'VmRSS');
export const peakRssMb = (pid: number | undefined) => statusMb(pid, 'VmHWM');

export interface Target {
  name: string;
  child: ChildProcess;
  base: string;
}

/** Starts `node <args>` on a free port and waits until `readyPath` answers. */
export async function startTarget(name: string, args: string[], env: Record<string, string>, readyPath: string): Promise<Target> {
  const port = await freePort();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries += 1) {
    if (child.exitCode !== null) throw new Error(`${name}: the process exited with ${child.exitCode}`);
    if (await fetch(base + readyPath).then(() => true, () => false)) return { name, child, base };
    if (tries === 300) throw new Error(`${name}: ${base + readyPath} did not answer`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function stopTarget(target: Target): Promise<void> {
  target.child.kill('SIGTERM');
  if (target.child.exitCode === null) await once(target.child, 'exit');
}
