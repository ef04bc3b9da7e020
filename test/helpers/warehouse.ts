// An account set up as the stock tests need it: two priced items, two locations, a customer; and the readings they
// assert (a level's numbers, the events of a kind, check:consistency).
import type { ExecutionContext } from 'ava';
import { checkConsistency } from '../../db/consistency.ts';
import type { Harness, TestAccount } from './harness.ts';
import { ledgerMismatches } from './ledger.ts';

export interface Warehouse extends TestAccount {
  customerId: string;
  boltId: string;
  nutId: string;
  mainId: string;
  backId: string;
}

/** A new account with BOLT (0.35) and NUT (0.1), locations MAIN and BACK, and a customer. */
export async function warehouse(h: Harness): Promise<Warehouse> {
  const account = await h.newAccount();
  const post = async (path: string, body: unknown) => (await account.api.post(path, body)).body.id as string;
  return {
    ...account,
    boltId: await post('/items', { sku: 'BOLT', name: 'Bolt', price: 0.35 }),
    nutId: await post('/items', { sku: 'NUT', name: 'Nut', price: 0.1 }),
    mainId: await post('/locations', { name: 'Main', code: 'MAIN' }),
    backId: await post('/locations', { name: 'Back room', code: 'BACK' }),
    customerId: await post('/customers', { name: 'Acme Ltd' }),
  };
}

/** Adds `quantity` at the location (MAIN by default) by an adjustment. */
export const stock = (s: Warehouse, itemId: string, quantity: number, locationId = s.mainId) =>
  s.api.post('/stock-adjustments', { itemId, locationId, quantity, reason: 'count' });

export interface LevelNumbers {
  quantity: number;
  reserved: number;
  available: number;
  incoming: number;
  oversold: boolean;
}

/** The level's numbers as `/stock-levels` answers them (all zero where there is no level). */
export async function levelOf(s: Warehouse, itemId: string, locationId = s.mainId): Promise<LevelNumbers> {
  const { body } = await s.api.get(`/stock-levels?itemId=${itemId}&locationId=${locationId}`);
  const { itemId: _item, locationId: _location, updatedAt: _at, ...numbers } = body.data[0] ?? { quantity: 0, reserved: 0, available: 0, incoming: 0, oversold: false };
  return numbers;
}

/** The `data` of the account's events of one kind, oldest first. */
export const eventsOf = async (h: Harness, accountId: string, type: string): Promise<any[]> =>
  (await h.db('events').where({ account_id: accountId, type }).orderBy('seq').select('data')).map((row) => row.data);

/** The promises check:consistency makes hold on the harness's database, and the account's ledger adds up. */
export async function consistent(t: ExecutionContext, h: Harness, accountId: string): Promise<void> {
  t.deepEqual((await checkConsistency(h.db)).problems, [], 'check:consistency');
  t.deepEqual(await ledgerMismatches(h.db, accountId), []);
}
