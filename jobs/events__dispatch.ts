// Fans one event out and makes its first attempts: a dispatch row for every enabled webhook of its account that
// wants its kind, claimed (its lease taken) in the same statement, then posted to each. The dispatch row's key
// (webhook, event) makes a re-run, or a duplicated job, claim only what is still at its first attempt and unsent.
// The fan-outs of jobs running at once are claimed together, in one statement.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';
import { isUuid } from '../shared/guards.ts';
import { isDispatchEventPayload, PING_EVENT } from '../shared/events.ts';
import { batched } from './batched.ts';
import { leaseSeconds, TARGET_COLUMNS, type Deliveries, type Target } from './deliveries.ts';

/** Events claimed by one statement at most. */
const MAX_EVENTS_PER_STATEMENT = 100;

interface FanOut {
  targets: Target[];
  /** Dispatches of the event at their first attempt that another job holds the lease of (a re-run). */
  busy: number;
}

/**
 * For each event: its dispatch rows, new ones inserted and leased, and existing ones leased again if their first
 * attempt is still to make and nobody holds them (a re-run after a worker died). A dispatch whose first attempt
 * is leased by someone else is counted as busy; one acknowledged or past its first attempt is left to its jobs.
 */
async function claimFanOuts(db: Knex, leaseS: number, eventIds: string[]): Promise<FanOut[]> {
  const { rows } = await db.raw<{ rows: Array<Target & { busy: boolean }> }>(
    `with wanted as (
       select w.id as webhook_id, e.id as event_id, e.account_id
       from events e join webhooks w on w.account_id = e.account_id
       where e.id = any(?::uuid[]) and e.type <> ? and w.enabled and (e.type = any(w.events) or '*' = any(w.events))
     ), claimed as (
       insert into webhook_dispatches as d (webhook_id, event_id, account_id, leased_until)
       select webhook_id, event_id, account_id, now() + make_interval(secs => ?) from wanted
       on conflict (webhook_id, event_id) do update set leased_until = excluded.leased_until
       where d.acknowledged_at is null and d.retry = 0 and (d.leased_until is null or d.leased_until < now())
       returning d.webhook_id, d.event_id
     )
     select c.webhook_id, c.event_id, ${TARGET_COLUMNS}, false as busy
     from claimed c join webhooks w on w.id = c.webhook_id join events e on e.id = c.event_id
     union all
     -- The rows as they were before this statement: those leased by another attempt were not claimed above.
     select d.webhook_id, d.event_id, null, null, null, null, null, null, null, null, true
     from wanted x join webhook_dispatches d using (webhook_id, event_id)
     where d.acknowledged_at is null and d.retry = 0 and d.leased_until >= now()`,
    [eventIds, PING_EVENT, leaseS],
  );
  const byEvent = new Map<string, FanOut>(eventIds.map((id) => [id, { targets: [], busy: 0 }]));
  for (const { busy, ...target } of rows) {
    const fanOut = byEvent.get(target.event_id)!;
    if (busy) fanOut.busy += 1;
    else fanOut.targets.push(target);
  }
  return eventIds.map((id) => byEvent.get(id)!);
}

export function makeDispatchEvent(db: Knex, deliveries: Deliveries, timeoutMs: number): Task {
  const claim = batched(claimFanOuts.bind(null, db, leaseSeconds(timeoutMs)), MAX_EVENTS_PER_STATEMENT);
  return async (payload, helpers) => {
    if (!isDispatchEventPayload(payload) || !isUuid(payload.eventId)) {
      // Retrying cannot fix a malformed payload: log it and let the job complete.
      helpers.logger.error('events__dispatch: malformed payload, skipped', { payload });
      return;
    }
    const { targets, busy } = await claim(payload.eventId);
    // Each attempt runs to its end, whatever becomes of the others, so that no lease is left held behind a failure.
    const settled = await Promise.allSettled(targets.map((target) =>
      deliveries.attempt({ webhookId: target.webhook_id, eventId: payload.eventId, retry: 0 }, target, helpers.abortSignal)));
    const failed = settled.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    // Failing hands this job back to graphile-worker, which runs it again shortly, by when the other attempt has
    // finished or its lease has run out.
    if (busy > 0) throw new Error(`another attempt of ${busy} of this event's deliveries is in flight`);
  };
}
