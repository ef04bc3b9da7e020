import { resourceRoutes } from '../../framework/resource-routes.ts';
import { findCustomer, insertCustomer, listCustomers, toCustomer, updateCustomer } from './queries.ts';
import { CreateCustomer, Customer, CustomerListQuery, UpdateCustomer } from './schema.ts';

export const customerRoutes = Object.values(resourceRoutes({
  name: 'Customer',
  path: '/customers',
  tag: 'Customers',
  record: Customer,
  createBody: CreateCustomer,
  updateBody: UpdateCustomer,
  listQuery: CustomerListQuery,
  toRecord: toCustomer,
  find: findCustomer,
  insert: insertCustomer,
  update: updateCustomer,
  list: listCustomers,
}));
