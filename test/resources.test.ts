import test from 'ava';
import { useHarness } from './helpers/harness.ts';

const h = useHarness(test);

test('locations: create, read, update; a duplicate code is a 409; fields are validated', async (t) => {
  const { api } = await h.newAccount();
  const created = await api.post('/locations', { name: 'Main warehouse', code: 'MAIN', address: '1 Dock Road' });
  t.is(created.status, 201);
  t.like(created.body, { name: 'Main warehouse', code: 'MAIN', address: '1 Dock Road' });
  t.deepEqual((await api.get(`/locations/${created.body.id}`)).body, created.body);

  const noCode = await api.post('/locations', { name: 'Overflow' });
  t.is(noCode.status, 201);
  t.is(noCode.body.code, null);
  t.is((await api.post('/locations', { name: 'Another without code' })).status, 201, 'many locations may have no code');

  const duplicate = await api.post('/locations', { name: 'Copy', code: 'MAIN' });
  t.is(duplicate.status, 409);
  t.is(duplicate.body.existingId, created.body.id);
  t.is((await api.patch(`/locations/${noCode.body.id}`, { code: 'MAIN' })).status, 409);

  const patched = await api.patch(`/locations/${created.body.id}`, { address: null });
  t.like(patched.body, { name: 'Main warehouse', address: null });

  const invalid = await api.post('/locations', { code: 7, address: ['x'] });
  t.is(invalid.status, 400);
  t.deepEqual(invalid.body.errors.map((e: { path: string }) => e.path).sort(), ['address', 'code', 'name']);

  t.deepEqual((await api.get('/locations?code=MAIN')).body.data.map((l: { id: string }) => l.id), [created.body.id]);
  t.is((await api.get('/locations')).body.data.length, 3);
});

test('customers: create, read, update, filter; email must be valid', async (t) => {
  const { api } = await h.newAccount();
  const created = await api.post('/customers', { name: 'Acme Ltd', email: 'Buyer@Acme.example', phone: '+44 20 7946 0000', externalId: 'crm-42' });
  t.is(created.status, 201);
  t.like(created.body, { name: 'Acme Ltd', email: 'Buyer@Acme.example', externalId: 'crm-42' });
  t.deepEqual((await api.get(`/customers/${created.body.id}`)).body, created.body);

  const bad = await api.post('/customers', { name: 'X', email: 'not-an-email' });
  t.is(bad.status, 400);
  t.deepEqual(bad.body.errors, [{ path: 'email', message: 'must be a valid email address' }]);

  const patched = await api.patch(`/customers/${created.body.id}`, { phone: null, externalId: 'crm-43' });
  t.like(patched.body, { phone: null, externalId: 'crm-43', email: 'Buyer@Acme.example' });

  await api.post('/customers', { name: 'Other' });
  t.deepEqual((await api.get('/customers?externalId=crm-43')).body.data.map((c: { id: string }) => c.id), [created.body.id]);
  t.is((await api.get('/customers?email=buyer@acme.example')).body.data.length, 1);
  t.is((await api.get('/customers')).body.data.length, 2);
});

test('another account\'s records are 404 everywhere and never listed', async (t) => {
  const owner = await h.newAccount('Owner');
  const intruder = await h.newAccount('Intruder');
  const records = {
    items: (await owner.api.post('/items', { sku: 'SECRET', name: 'Secret' })).body,
    locations: (await owner.api.post('/locations', { name: 'Hidden', code: 'HID' })).body,
    customers: (await owner.api.post('/customers', { name: 'Private' })).body,
  };
  const names = { items: 'Item', locations: 'Location', customers: 'Customer' };

  for (const [collection, record] of Object.entries(records) as Array<[keyof typeof records, { id: string }]>) {
    const get = await intruder.api.get(`/${collection}/${record.id}`);
    t.is(get.status, 404, `GET ${collection}`);
    t.deepEqual(get.body, { error: `${names[collection]} not found` });
    t.is((await intruder.api.patch(`/${collection}/${record.id}`, { name: 'Mine now' })).status, 404, `PATCH ${collection}`);
    t.deepEqual((await intruder.api.get(`/${collection}`)).body.data, [], `list ${collection}`);
    t.is((await owner.api.get(`/${collection}`)).body.data.length, 1);
  }
  t.is((await intruder.api.get(`/inventory-items/${records.items.id}`)).status, 404);
  t.is((await intruder.api.delete(`/items/${records.items.id}`)).status, 404);
  t.is((await intruder.api.get('/items?sku=SECRET&includeArchived=true')).body.data.length, 0);
  t.false((await owner.api.get(`/items/${records.items.id}`)).body.archived, 'the intruder changed nothing');
  t.is((await owner.api.get(`/items/${records.items.id}`)).body.name, 'Secret');

  // The same code and sku are free in the intruder's account.
  t.is((await intruder.api.post('/locations', { name: 'Mine', code: 'HID' })).status, 201);
  t.is((await intruder.api.post('/items', { sku: 'SECRET', name: 'Mine' })).status, 201);
});
