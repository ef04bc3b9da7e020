import { resourceRoutes } from '../../framework/resource-routes.ts';
import { findCustomer, insertCustomer, listCustomers, toCustomer, updateCustomer } from './queries.ts';
import { CreateCustomer, Customer, CustomerListQuery, UpdateCustomer } from './schema.ts';

export const customerRoutes = Object.values(resourceRoutes({
  noun: 'customer',
  path: '/customers',
  tag: 'Customers',
  record: Customer,
  createBody: CreateCustomer,
  updateBody: UpdateCustomer,
  query: CustomerListQuery,
  toRecord: toCustomer,
  find: findCustomer,
  insert: insertCustomer,
  update: updateCustomer,
  list: listCustomers,
}));
