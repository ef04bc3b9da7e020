import type { Knex } from 'knex';

// The levels a stock statement changes, locked in the global order (item, then location) and read as they now stand.
// A function of its own, not a part of the statement: a level another statement updated while this one waited for
// its lock is re-checked (EvalPlanQual) by setting up again the plan of the query that locked it. In the statement
// that query was the whole statement, every part set up again for each waiter: 16% of PostgreSQL's time under one
// hot item (`perf`). Here it is this one query. Its plan is the generic one (an index probe per level), whatever
// the arrays' lengths; `rows 10` is the callers' estimate of what it returns, as for an array of unknown length.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create function stockroom_lock_levels(account uuid, items uuid[], locations uuid[])
    returns table (item_id uuid, location_id uuid, quantity numeric, reserved numeric, incoming numeric)
    language plpgsql rows 10 set plan_cache_mode = force_generic_plan as $$
    begin
      return query select s.item_id, s.location_id, s.quantity, s.reserved, s.incoming from stock_levels s
        join unnest(items, locations) as d(item_id, location_id) on s.item_id = d.item_id and s.location_id = d.location_id
        where s.account_id = account order by s.item_id, s.location_id for update of s;
    end
  $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function if exists stockroom_lock_levels(uuid, uuid[], uuid[])');
}
