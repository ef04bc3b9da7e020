// The API's table of contents: every authenticated route, in the order the OpenAPI document lists them.
import type { AnyRoute } from './framework/route.ts';
import { customerRoutes } from './resources/customers/routes.ts';
import { itemRoutes } from './resources/items/routes.ts';
import { eventRoutes } from './resources/events/routes.ts';
import { locationRoutes } from './resources/locations/routes.ts';
import { productionRecordRoutes } from './resources/production-records/routes.ts';
import { purchaseOrderRoutes } from './resources/purchase-orders/routes.ts';
import { reservationRoutes } from './resources/reservations/routes.ts';
import { salesOrderRoutes } from './resources/sales-orders/routes.ts';
import { stockCountRoutes } from './resources/stock-counts/routes.ts';
import { stockRoutes } from './resources/stock/routes.ts';
import { webhookRoutes } from './resources/webhooks/routes.ts';

/** Every path of the API starts with this; another prefix is a 404. */
export const API_PREFIX = '/rest/api/v2';

export const apiRoutes: AnyRoute[] = [
  ...itemRoutes,
  ...locationRoutes,
  ...customerRoutes,
  ...stockRoutes,
  ...stockCountRoutes,
  ...reservationRoutes,
  ...salesOrderRoutes,
  ...purchaseOrderRoutes,
  ...productionRecordRoutes,
  ...webhookRoutes,
  ...eventRoutes,
];

/** What each tag of the OpenAPI document groups. */
export const apiTags: Record<string, string> = {
  Items: 'Inventory items (also under `/inventory-items`): what you stock, with its SKU, prices and unit; upserted in bulk by sku',
  Locations: 'Places that hold stock: warehouses, shops, bins',
  Customers: 'Who sales orders are for',
  Stock: 'Stock levels (on hand, reserved, available, incoming), the ledger of movements, adjustments (also in bulk), transfers and counts',
  Reservations: 'Stock held for sales orders and by hand: counted in `reserved`, no longer `available`',
  'Sales orders': 'Orders from customers: created in either shape, fulfilled from a location or cancelled',
  'Purchase orders': 'Orders to suppliers: confirmed, held, closed (received into stock) or cancelled',
  'Production records': 'Making items from components at one location',
  Webhooks: 'Subscriptions that receive events as signed HTTP POSTs, and their delivery log',
  Events: 'Every change as an event, for clients that poll instead of receiving webhooks',
};
