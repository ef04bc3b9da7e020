// The API's table of contents: every authenticated route, in the order the OpenAPI document lists them.
import type { AnyRoute } from './framework/route.ts';
import { customerRoutes } from './resources/customers/routes.ts';
import { itemRoutes } from './resources/items/routes.ts';
import { eventRoutes } from './resources/events/routes.ts';
import { locationRoutes } from './resources/locations/routes.ts';
import { productionRecordRoutes } from './resources/production-records/routes.ts';
import { purchaseOrderRoutes } from './resources/purchase-orders/routes.ts';
import { salesOrderRoutes } from './resources/sales-orders/routes.ts';
import { stockRoutes } from './resources/stock/routes.ts';
import { webhookRoutes } from './resources/webhooks/routes.ts';

export const apiRoutes: AnyRoute[] = [
  ...itemRoutes,
  ...locationRoutes,
  ...customerRoutes,
  ...stockRoutes,
  ...salesOrderRoutes,
  ...purchaseOrderRoutes,
  ...productionRecordRoutes,
  ...webhookRoutes,
  ...eventRoutes,
];
