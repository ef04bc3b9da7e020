// Daily: events older than EVENT_RETENTION_DAYS go, with their dispatch rows and delivery log, unless a delivery of
// theirs is still scheduled (their fan-out job, a retry, a redelivery): those stay until it is done. Each account
// remembers how far its events were deleted, so that GET /events?after=<a deleted id> answers 410 (see
// server/resources/events/queries.ts).
import type { Knex } from 'knex';
import { DELIVER_WEBHOOK_TASK, deliveryJobKey, dispatchJobKey, jobKeySql } from '../shared/events.ts';
import { pruneInBatches, type Prune } from './prune.ts';

export interface EventPruneOptions {
  days: number;
  /** The clock the cut-off is reckoned from (tests move it). */
  now?: () => Date;
  /** Events looked at per statement. */
  batch?: number;
}

// Events are walked in seq order, a window of `limit` at a time: the oldest come first, so the walk stops at the
// first window without an event old enough, never scanning the events it keeps.
const PRUNE_WINDOW = `
  with window_ as (
    select id, account_id, created_at, seq from events where seq > :after order by seq limit :limit
  ), redelivering as materialized (
    select (j.payload->>'eventId')::uuid as event_id
    from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = :deliver and j.key is null
  ), doomed as (
    select w.id, w.account_id, w.created_at from window_ w
    where w.created_at < :cutoff
      and not exists (select 1 from graphile_worker._private_jobs j where j.key = ${jobKeySql(dispatchJobKey, 'w.id')})
      and not exists (
        select 1 from webhooks h join webhook_dispatches d on d.webhook_id = h.id and d.event_id = w.id
        where h.account_id = w.account_id and d.acknowledged_at is null
          and exists (select 1 from graphile_worker._private_jobs j where j.key = ${jobKeySql(deliveryJobKey, 'd.webhook_id', 'd.event_id', 'd.retry')}))
      and w.id not in (select event_id from redelivering)
  ), dispatches as (
    delete from webhook_dispatches d using doomed e, webhooks h
    where h.account_id = e.account_id and d.webhook_id = h.id and d.event_id = e.id
  ), delivery_log as (
    delete from webhook_deliveries l using doomed e, webhooks h
    where h.account_id = e.account_id and l.webhook_id = h.id and l.event_id = e.id
  ), gone as (
    delete from events e using doomed where e.id = doomed.id returning e.account_id, e.created_at
  ), remembered as (
    insert into event_retention (account_id, pruned_through)
    select account_id, max(created_at) from gone group by account_id
    on conflict (account_id) do update set pruned_through = greatest(event_retention.pruned_through, excluded.pruned_through)
  )
  select (select count(*) from gone)::int as deleted,
         (select count(*) from window_)::int as seen,
         (select count(*) from window_ where created_at < :cutoff)::int as old,
         (select max(seq) from window_) as last`;

export function pruneEvents(db: Knex, options: EventPruneOptions): Prune {
  const now = options.now ?? (() => new Date());
  return pruneInBatches('events__prune', '30 3 * * *', `events older than ${options.days} days`, () => {
    const cutoff = new Date(now().getTime() - options.days * 86_400_000);
    let after = 0;
    return async (limit) => {
      const { rows: [result] } = await db.raw<{ rows: [{ deleted: number; seen: number; old: number; last: number | null }] }>(
        PRUNE_WINDOW, { after, limit, cutoff, deliver: DELIVER_WEBHOOK_TASK });
      after = result.last ?? after;
      return { deleted: result.deleted, more: result.seen === limit && result.old > 0 };
    };
  }, options.batch);
}
