// What `npm run check:consistency` verifies: the promises the service makes, checked on the data as it stands.
//
// - Stock: every level equals the sum of its movements (and a movement never exists without its level), and no
//   level is negative.
// - Reservations: every level's `reserved` equals the sum of its open reservations; no open reservation is more than
//   a minute past its expiry without the job that releases it, or held for an order that is no longer open; no
//   order line holds more than it still needs.
// - Incoming: every level's `incoming` equals what the confirmed, partially received and on-hold purchase orders
//   still bring there.
// - Fulfilments and receipts: every order line's fulfilled (received) quantity is the sum of its fulfilments'
//   (receipts') lines and, per order and item, of their movements; an order's status agrees with its lines.
// - Fan-out: every event has a dispatch row for each enabled subscription that wanted its kind and was last
//   created or changed before the event, unless its fan-out job is still pending. (A subscription changed after
//   the event cannot tell what it wanted then; it is left out.)
// - Delivery: every dispatch is acknowledged, or has the job of its next scheduled attempt pending (the job whose
//   key carries the dispatch's `retry`, or for the first attempt the event's fan-out job) or a redelivery pending,
//   or has used up the retry schedule, or belongs to a disabled subscription (which is sent nothing until
//   re-enabled), or was made by redeliveries alone (an event the subscription did not want, sent on request). No
//   job has failed for good.
// - At most once after an acknowledgement: a dispatch has at most one succeeded scheduled attempt in the delivery
//   log, and a succeeded attempt always set `acknowledged_at`. The claims (jobs/events__dispatch.ts,
//   jobs/webhooks__deliver.ts) take a scheduled attempt only while `acknowledged_at` is null, and jobs/deliveries.ts
//   records the success and `acknowledged_at` in one transaction, so a second success of a scheduled attempt is an
//   event acknowledged twice. Explicit redeliveries (the log's `redelivery`) are asked for and do not count. A
//   receiver that answered 2xx to an attempt whose worker died before recording it gets the event again: that is
//   the at-least-once promise, and only the receiver (by the `webhook-id` it already saw) can tell; the log never
//   recorded the first success.
import {
  DELIVER_WEBHOOK_TASK, deliveryJobKey, DISPATCH_EVENT_TASK, dispatchJobKey, jobKeySql, PING_EVENT, RETRY_DELAYS_S,
} from '../shared/events.ts';
import { expiryJobKey } from '../shared/stock.ts';
import type { Knex } from 'knex';

export interface ConsistencyReport {
  /** One line per check: what was looked at. */
  checked: string[];
  /** One line per problem found; empty when everything holds. */
  problems: string[];
}

type Rows = Array<Record<string, unknown>>;

async function rows(db: Knex, sql: string, bindings: unknown[] = []): Promise<Rows> {
  return (await db.raw(sql, bindings as never[])).rows as Rows;
}

async function count(db: Knex, sql: string, bindings: unknown[] = []): Promise<number> {
  return Number((await rows(db, sql, bindings))[0]!.n);
}

/** Fulfilments of sales orders and receipts of purchase orders: records of parts of order lines, with their movements. */
interface PartFlow {
  noun: string;
  orders: string;
  lines: string;
  orderId: string;
  done: string;
  records: string;
  recordLines: string;
  recordId: string;
  lineId: string;
  movement: string;
  /** -1: the movements take stock out. */
  sign: number;
  /** Movements of orders taken in one go before the records existed name the order. */
  legacySource: string;
  /** Statuses in which nothing, something but not everything, and everything has been taken. */
  none: string[];
  some: string[];
  all: string[];
}

const PART_FLOWS: PartFlow[] = [
  {
    noun: 'sales order', orders: 'sales_orders', lines: 'sales_order_lines', orderId: 'sales_order_id', done: 'quantity_fulfilled',
    records: 'sales_fulfillments', recordLines: 'sales_fulfillment_lines', recordId: 'fulfillment_id', lineId: 'sales_order_line_id',
    movement: 'sales_fulfillment', sign: -1, legacySource: 'sales_order',
    none: ['open'], some: ['partially_fulfilled'], all: ['fulfilled'],
  },
  {
    noun: 'purchase order', orders: 'purchase_orders', lines: 'purchase_order_lines', orderId: 'purchase_order_id', done: 'quantity_received',
    records: 'purchase_receipts', recordLines: 'purchase_receipt_lines', recordId: 'receipt_id', lineId: 'purchase_order_line_id',
    movement: 'purchase_receipt', sign: 1, legacySource: 'purchase_order',
    none: ['draft', 'confirmed'], some: ['partially_received'], all: [],
  },
];

const list = (values: string[]) => (values.length ? values.map((value) => `'${value}'`).join(', ') : 'null');

async function partProblems(db: Knex, flow: PartFlow): Promise<string[]> {
  const problems: string[] = [];
  const unsummed = await rows(db, `
    select l.id, l.${flow.orderId} as order_id, l.${flow.done} as done, coalesce(sum(p.quantity), 0) as parts
    from ${flow.lines} l left join ${flow.recordLines} p on p.${flow.lineId} = l.id
    group by l.id having l.${flow.done} <> coalesce(sum(p.quantity), 0)`);
  for (const row of unsummed) problems.push(`line ${row.id} of ${flow.noun} ${row.order_id} has ${row.done} taken, its parts sum to ${row.parts}`);
  // Per order and item: lines of one item on one order are one quantity to the ledger.
  const unmoved = await rows(db, `
    with taken as (
      select l.account_id, l.${flow.orderId} as order_id, l.item_id, sum(l.${flow.done}) as taken
      from ${flow.lines} l group by 1, 2, 3
    ), moved as (
      select m.account_id, coalesce(r.${flow.orderId}, m.source_id) as order_id, m.item_id, ${flow.sign} * sum(m.quantity) as moved
      from stock_movements m left join ${flow.records} r on m.source_type = '${flow.movement}' and r.id = m.source_id
      where m.type = '${flow.movement}' and (m.source_type = '${flow.movement}' or m.source_type = '${flow.legacySource}')
      group by 1, 2, 3
    )
    select coalesce(t.order_id, m.order_id) as order_id, coalesce(t.item_id, m.item_id) as item_id, coalesce(t.taken, 0) as taken,
           coalesce(m.moved, 0) as moved
    from taken t full join moved m on m.account_id = t.account_id and m.order_id = t.order_id and m.item_id = t.item_id
    where coalesce(t.taken, 0) <> coalesce(m.moved, 0)`);
  for (const row of unmoved) {
    problems.push(`${flow.noun} ${row.order_id} has ${row.taken} of item ${row.item_id} taken by its lines, its movements say ${row.moved}`);
  }
  const misstated = await rows(db, `
    select o.id, o.status, bool_and(l.${flow.done} = 0) as none, bool_and(l.${flow.done} = l.quantity) as every
    from ${flow.orders} o join ${flow.lines} l on l.${flow.orderId} = o.id group by o.id
    having (o.status in (${list(flow.none)}) and not bool_and(l.${flow.done} = 0))
        or (o.status in (${list(flow.some)}) and (bool_and(l.${flow.done} = 0) or bool_and(l.${flow.done} = l.quantity)))
        or (o.status in (${list(flow.all)}) and not bool_and(l.${flow.done} = l.quantity))`);
  for (const row of misstated) problems.push(`${flow.noun} ${row.id} is ${row.status}, which its lines contradict`);
  return problems;
}

export async function checkConsistency(db: Knex): Promise<ConsistencyReport> {
  const checked: string[] = [];
  const problems: string[] = [];

  const levels = await count(db, 'select count(*) as n from stock_levels');
  const accounts = await count(db, 'select count(distinct account_id) as n from stock_levels');
  const mismatched = await rows(db, `
    with moved as (
      select account_id, item_id, location_id, sum(quantity) as moved from stock_movements group by 1, 2, 3
    )
    select coalesce(l.account_id, m.account_id) as account_id, coalesce(l.item_id, m.item_id) as item_id,
           coalesce(l.location_id, m.location_id) as location_id, l.quantity, coalesce(m.moved, 0) as moved
    from stock_levels l
    full join moved m on m.account_id = l.account_id and m.item_id = l.item_id and m.location_id = l.location_id
    where l.quantity is distinct from coalesce(m.moved, 0)`);
  for (const row of mismatched) {
    problems.push(`stock level of item ${row.item_id} at location ${row.location_id} (account ${row.account_id}) is ` +
      `${row.quantity ?? 'missing'}, its movements sum to ${row.moved}`);
  }
  const negative = await rows(db, 'select account_id, item_id, location_id, quantity from stock_levels where quantity < 0');
  for (const row of negative) {
    problems.push(`stock level of item ${row.item_id} at location ${row.location_id} (account ${row.account_id}) is negative: ${row.quantity}`);
  }
  checked.push(`stock: ${levels} levels in ${accounts} accounts equal the sum of their movements and are not negative`);

  const reservations = await count(db, "select count(*) as n from reservations where status = 'open'");
  const misreserved = await rows(db, `
    with held as (
      select account_id, item_id, location_id, sum(quantity) as held from reservations where status = 'open' group by 1, 2, 3
    )
    select coalesce(l.account_id, h.account_id) as account_id, coalesce(l.item_id, h.item_id) as item_id,
           coalesce(l.location_id, h.location_id) as location_id, l.reserved, coalesce(h.held, 0) as held
    from stock_levels l
    full join held h on h.account_id = l.account_id and h.item_id = l.item_id and h.location_id = l.location_id
    where coalesce(l.reserved, 0) is distinct from coalesce(h.held, 0) or l.reserved is null`);
  for (const row of misreserved) {
    problems.push(`stock level of item ${row.item_id} at location ${row.location_id} (account ${row.account_id}) has ` +
      `${row.reserved ?? 'no level, so nothing'} reserved, its open reservations hold ${row.held}`);
  }
  const overdue = await rows(db, `
    select r.id, r.expires_at from reservations r
    where r.status = 'open' and r.expires_at < now() - interval '1 minute'
      and not exists (select 1 from graphile_worker.jobs j where j.key = ${jobKeySql(expiryJobKey, 'r.id')})`);
  for (const row of overdue) problems.push(`reservation ${row.id} expired at ${row.expires_at} and is still open, with no job to release it`);
  const orphaned = await rows(db, `
    select r.id, o.id as order_id, o.status from reservations r join sales_orders o on o.id = r.sales_order_id
    where r.status = 'open' and o.status not in ('open', 'partially_fulfilled')`);
  for (const row of orphaned) problems.push(`reservation ${row.id} is open for sales order ${row.order_id}, which is ${row.status}`);
  const overheld = await rows(db, `
    select l.id, l.sales_order_id, l.quantity - l.quantity_fulfilled as needs, sum(r.quantity) as held
    from sales_order_lines l join reservations r on r.sales_order_line_id = l.id and r.status = 'open'
    group by l.id having sum(r.quantity) > l.quantity - l.quantity_fulfilled`);
  for (const row of overheld) {
    problems.push(`line ${row.id} of sales order ${row.sales_order_id} holds ${row.held} in open reservations but needs only ${row.needs}`);
  }
  checked.push(`reservations: ${reservations} open; every level's reserved is the sum of its open reservations, none overdue, `
    + 'held for an order no longer open, or more than its line still needs');

  const expecting = await rows(db, `
    with expected as (
      select o.account_id, l.item_id, o.location_id, sum(l.quantity - l.quantity_received) as expected
      from purchase_orders o join purchase_order_lines l on l.purchase_order_id = o.id
      where o.status in ('confirmed', 'partially_received', 'on_hold') group by 1, 2, 3
    )
    select coalesce(l.account_id, e.account_id) as account_id, coalesce(l.item_id, e.item_id) as item_id,
           coalesce(l.location_id, e.location_id) as location_id, l.incoming, coalesce(e.expected, 0) as expected
    from stock_levels l
    full join expected e on e.account_id = l.account_id and e.item_id = l.item_id and e.location_id = l.location_id
    where coalesce(l.incoming, 0) is distinct from least(coalesce(e.expected, 0), 999999999.999999)`);
  for (const row of expecting) {
    problems.push(`stock level of item ${row.item_id} at location ${row.location_id} (account ${row.account_id}) has ` +
      `${row.incoming ?? 'no level, so nothing'} incoming, its expected purchase orders still bring ${row.expected}`);
  }
  checked.push('incoming: every level\'s incoming is what its confirmed, partially received and on-hold purchase orders still bring');

  for (const flow of PART_FLOWS) problems.push(...await partProblems(db, flow));
  checked.push('fulfilments and receipts: every line\'s quantityFulfilled and quantityReceived is the sum of its parts and of their '
    + 'movements, and every order\'s status agrees with its lines');

  const events = await count(db, 'select count(*) as n from events where type <> ?', [PING_EVENT]);
  const undispatched = await rows(db, `
    select e.id as event_id, e.type, w.id as webhook_id
    from events e join webhooks w on w.account_id = e.account_id
    where e.type <> ? and w.enabled and (e.type = any(w.events) or '*' = any(w.events)) and w.updated_at < e.created_at
      and not exists (select 1 from webhook_dispatches d where d.webhook_id = w.id and d.event_id = e.id)
      and not exists (select 1 from graphile_worker.jobs j where j.key = ${jobKeySql(dispatchJobKey, 'e.id')})`, [PING_EVENT]);
  for (const row of undispatched) {
    problems.push(`event ${row.event_id} (${row.type}) was never dispatched to webhook ${row.webhook_id}, which wanted it`);
  }
  checked.push(`fan-out: ${events} events reached every subscription that wanted them (or their fan-out is pending)`);

  const dispatches = await count(db, 'select count(*) as n from webhook_dispatches');
  const acknowledged = await count(db, 'select count(*) as n from webhook_dispatches where acknowledged_at is not null');
  const stranded = await rows(db, `
    select d.webhook_id, d.event_id, d.retry, d.attempts
    from webhook_dispatches d join webhooks w on w.id = d.webhook_id
    where d.acknowledged_at is null and w.enabled and d.retry <= ?
      -- Attempts made, none of them scheduled: a dispatch only redeliveries made (of an event it did not want).
      and not (d.retry = 0 and d.attempts > 0)
      and not exists (select 1 from graphile_worker.jobs j
                      where j.key = ${jobKeySql(deliveryJobKey, 'd.webhook_id', 'd.event_id', 'd.retry')})
      -- The fan-out makes the first attempt: until its job is done, it answers for it.
      and not (d.retry = 0 and exists (select 1 from graphile_worker.jobs j where j.key = ${jobKeySql(dispatchJobKey, 'd.event_id')}))
      -- The public jobs view leaves the payload out; redelivery jobs have no key to find them by.
      and not exists (select 1 from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
                      where t.identifier = ? and j.key is null
                        and j.payload->>'webhookId' = d.webhook_id::text and j.payload->>'eventId' = d.event_id::text)`,
  [RETRY_DELAYS_S.length, DELIVER_WEBHOOK_TASK]);
  for (const row of stranded) {
    problems.push(`event ${row.event_id} to webhook ${row.webhook_id} is neither acknowledged nor scheduled ` +
      `(${row.attempts} attempts, retry step ${row.retry} has no job)`);
  }
  const failedJobs = await rows(db, `
    select id, task_identifier, key, last_error from graphile_worker.jobs
    where attempts >= max_attempts and task_identifier in (?, ?)`, [DISPATCH_EVENT_TASK, DELIVER_WEBHOOK_TASK]);
  for (const row of failedJobs) {
    problems.push(`job ${row.id} (${row.task_identifier} ${row.key ?? ''}) failed for good: ${String(row.last_error).split('\n')[0]}`);
  }
  checked.push(`delivery: ${dispatches} dispatches, ${acknowledged} acknowledged, the rest scheduled, given up or disabled; no job failed for good`);

  const twice = await rows(db, `
    select webhook_id, event_id, count(*) as n from webhook_deliveries
    where outcome = 'succeeded' and not redelivery group by webhook_id, event_id having count(*) > 1`);
  for (const row of twice) {
    problems.push(`event ${row.event_id} was acknowledged ${row.n} times by webhook ${row.webhook_id}`);
  }
  const unrecorded = await rows(db, `
    select distinct l.webhook_id, l.event_id from webhook_deliveries l
    join webhook_dispatches d on d.webhook_id = l.webhook_id and d.event_id = l.event_id
    where l.outcome = 'succeeded' and not l.redelivery and d.acknowledged_at is null`);
  for (const row of unrecorded) {
    problems.push(`event ${row.event_id} succeeded to webhook ${row.webhook_id} but its dispatch is not acknowledged`);
  }
  checked.push('acknowledgements: no event acknowledged twice by one subscription (redeliveries asked for through the API aside)');

  return { checked, problems };
}
