import type { Knex } from 'knex';
import { orderNumberSequence } from '../accounts.ts';

// An account's generated sales order numbers come from a sequence of its own, no longer from a counter row that every
// create of the account locked from its bump to its commit (a create's whole statement, events and commit included):
// creates without a number of their own queued on it, a quarter slower than those with one. A sequence is never
// locked and never rolls back; the create draws from it only once nothing can refuse it but a clash with a racing
// identical create (whose number is then not used) or a fault. Each sequence continues its account's counter.
export async function up(knex: Knex): Promise<void> {
  const accounts: Array<{ id: string; value: string | null }> = await knex('accounts as a')
    .leftJoin('account_counters as c', (join) => join.on('c.account_id', 'a.id').andOnVal('c.name', 'sales_order'))
    .select('a.id', 'c.value');
  for (const account of accounts) {
    await knex.raw('create sequence ?? as bigint', [orderNumberSequence(account.id)]);
    if (account.value !== null) await knex.raw('select setval(?::regclass, ?)', [orderNumberSequence(account.id), account.value]);
  }
}

export async function down(knex: Knex): Promise<void> {
  const accounts: Array<{ id: string }> = await knex('accounts').select('id');
  for (const account of accounts) {
    const sequence = orderNumberSequence(account.id);
    const { rows: [state] } = await knex.raw('select last_value, is_called from ??', [sequence]);
    if (state.is_called) {
      await knex.raw(`insert into account_counters (account_id, name, value) values (?, 'sales_order', ?)
        on conflict (account_id, name) do update set value = excluded.value`, [account.id, state.last_value]);
    }
    await knex.raw('drop sequence ??', [sequence]);
  }
}
