import { listQuery } from '../../framework/pagination.ts';
import { id, named, nullable, object, optional, patchOf, text, timestamp, type Infer } from '../../framework/schema.ts';

export const Location = named('Location', object({
  id: id(),
  name: text(),
  code: nullable(text({ description: 'Short code, unique within the account.' })),
  address: nullable(text()),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type Location = Infer<typeof Location>;

export const CreateLocation = named('CreateLocation', object({
  name: text({ min: 1, max: 255 }),
  code: optional(nullable(text({ min: 1, max: 64, description: 'Unique within the account; a duplicate is a 409.' }))),
  address: optional(nullable(text({ max: 1000 }))),
}));
export type CreateLocation = Infer<typeof CreateLocation>;

export const UpdateLocation = named('UpdateLocation', patchOf(CreateLocation));
export type UpdateLocation = Infer<typeof UpdateLocation>;

export const LocationListQuery = listQuery({
  code: optional(text({ max: 64, description: 'Exact code.' })),
});
export type LocationListQuery = Infer<typeof LocationListQuery>;
