import * as s from 'superstruct';
import { EVENT_TYPES, PING_EVENT, type EventType } from '../../../shared/events.ts';
import { Item } from '../items/schema.ts';
import { ProductionRecord } from '../production-records/schema.ts';
import { ReservationEvent } from '../reservations/schema.ts';
import { PurchaseOrder } from '../purchase-orders/schema.ts';
import { SalesOrder } from '../sales-orders/schema.ts';
import { StockAdjustedEvent } from '../stock/schema.ts';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../framework/pagination.ts';
import { describe, enums, id, named, object, optional, queryInteger, text, timestamp, type AnyStruct, type Infer } from '../../framework/schema.ts';

export const Event = named('Event', object({
  id: id('Stable across every delivery of this event: the `webhook-id` header. Deduplicate on it.'),
  type: describe(enums([...EVENT_TYPES]), { description: 'The kind of event.' }),
  createdAt: timestamp(),
  data: describe(s.unknown(), { type: 'object', additionalProperties: true, description: 'The record as the API returns it (for `stock.adjusted`: the movement and the level it left).' }),
}));
export type Event = Infer<typeof Event>;

const pageSize = () => optional(queryInteger({
  min: 1, max: MAX_PAGE_SIZE,
  description: `Page size (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}); \`limit\` and \`size\` are the same parameter.`,
}));

export const EventListQuery = object({
  after: optional(describe(text({ max: 64 }), {
    description: 'An event id: only the events after it. Poll by passing the last id you received (the `Link` header does).',
  })),
  types: optional(describe(text({ max: 2000 }), { description: 'Comma-separated event kinds, e.g. `sales_order.created,stock.adjusted`.' })),
  page: optional(queryInteger({ min: 1, max: 1_000_000, description: 'Page number from the start (or from `after`), starting at 1.' })),
  limit: pageSize(),
  size: pageSize(),
});
export type EventListQuery = Infer<typeof EventListQuery>;

/** What each kind of event carries as `data` (the record as the API returns it): the document's `webhooks`. */
export const EVENT_DATA: Record<EventType | typeof PING_EVENT, AnyStruct> = {
  'item.created': Item,
  'item.updated': Item,
  'stock.adjusted': StockAdjustedEvent,
  'sales_order.created': SalesOrder,
  'sales_order.partially_fulfilled': SalesOrder,
  'sales_order.fulfilled': SalesOrder,
  'sales_order.cancelled': SalesOrder,
  'purchase_order.created': PurchaseOrder,
  'purchase_order.confirmed': PurchaseOrder,
  'purchase_order.held': PurchaseOrder,
  'purchase_order.partially_received': PurchaseOrder,
  'purchase_order.closed': PurchaseOrder,
  'purchase_order.cancelled': PurchaseOrder,
  'production_record.created': ProductionRecord,
  'reservation.created': ReservationEvent,
  'reservation.released': ReservationEvent,
  [PING_EVENT]: named('PingEvent', object({ webhookId: id('The subscription that was pinged.') })),
};
