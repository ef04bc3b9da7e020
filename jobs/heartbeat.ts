// Crash recovery. graphile-worker leaves the jobs of a worker that died without stopping (SIGKILL, a lost
// machine) locked for four hours. Each worker pool writes a heartbeat every few seconds; any worker that finds
// a pool silent for HEARTBEAT_DEAD_MS releases that pool's jobs at once, so another worker takes them.
import type { Knex } from 'knex';
import type { Logger } from '../shared/logger.ts';

export const HEARTBEAT_MS = 5_000;
export const HEARTBEAT_DEAD_MS = 30_000;

export interface Heartbeat {
  stop(): Promise<void>;
}

export function startHeartbeat(db: Knex, workerIds: () => string[], logger: Logger): Heartbeat {
  const beat = async () => {
    const ids = workerIds();
    if (ids.length) {
      await db('worker_heartbeats')
        .insert(ids.map((id) => ({ worker_id: id, seen_at: db.fn.now() })))
        .onConflict('worker_id').merge();
    }
    // Deleting and unlocking in one statement: two workers sweeping at once release each dead pool once.
    const { rows } = await db.raw<{ rows: Array<{ dead: string[] }> }>(
      `with dead as (
         delete from worker_heartbeats where seen_at < now() - make_interval(secs => ?) returning worker_id
       ), released as (
         select graphile_worker.force_unlock_workers(array(select worker_id from dead))
       )
       select array(select worker_id from dead) as dead from released`,
      [HEARTBEAT_DEAD_MS / 1000],
    );
    const dead = rows[0]?.dead ?? [];
    if (dead.length) logger.warn({ workers: dead }, 'released the jobs of workers that stopped sending heartbeats');
  };
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = beat().catch((error) => logger.warn({ err: error }, 'heartbeat failed'));
  };
  tick();
  const timer = setInterval(tick, HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      const ids = workerIds();
      if (ids.length) await db('worker_heartbeats').whereIn('worker_id', ids).delete().catch(() => {});
    },
  };
}
