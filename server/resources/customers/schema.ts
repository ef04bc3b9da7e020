import { listQuery } from '../../framework/pagination.ts';
import { email, id, named, nullable, object, optional, patchOf, text, timestamp, type Infer } from '../../framework/schema.ts';

export const Customer = named('Customer', object({
  id: id(),
  name: text(),
  email: nullable(email()),
  phone: nullable(text()),
  externalId: nullable(text({ description: "The customer's identifier in the caller's own system." })),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type Customer = Infer<typeof Customer>;

export const CreateCustomer = named('CreateCustomer', object({
  name: text({ min: 1, max: 255 }),
  email: optional(nullable(email())),
  phone: optional(nullable(text({ max: 64 }))),
  externalId: optional(nullable(text({ max: 255 }))),
}));
export type CreateCustomer = Infer<typeof CreateCustomer>;

export const UpdateCustomer = named('UpdateCustomer', patchOf(CreateCustomer));
export type UpdateCustomer = Infer<typeof UpdateCustomer>;

export const CustomerListQuery = listQuery({
  externalId: optional(text({ max: 255, description: 'Exact external id.' })),
  email: optional(text({ max: 254, description: 'Exact email address (case-insensitive).' })),
});
export type CustomerListQuery = Infer<typeof CustomerListQuery>;
