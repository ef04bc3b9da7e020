import { resourceRoutes } from '../../framework/resource-routes.ts';
import { findLocation, insertLocation, listLocations, toLocation, updateLocation } from './queries.ts';
import { CreateLocation, Location, LocationListQuery, UpdateLocation } from './schema.ts';

export const locationRoutes = Object.values(resourceRoutes({
  noun: 'location',
  path: '/locations',
  tag: 'Locations',
  record: Location,
  createBody: CreateLocation,
  updateBody: UpdateLocation,
  query: LocationListQuery,
  toRecord: toLocation,
  find: findLocation,
  insert: insertLocation,
  update: updateLocation,
  list: listLocations,
  conflict: 'Another location already has this code (the body carries its `existingId`)',
}));
