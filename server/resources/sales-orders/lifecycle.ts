// The sales-order life cycle as data: checks, 409 messages, OpenAPI descriptions and each transition's event are
// derived from it.
import type { EventType } from '../../../shared/events.ts';
import type { TransitionTable } from '../../framework/transitions.ts';

export const SALES_ORDER_STATUSES = ['open', 'fulfilled', 'cancelled'] as const;
export type SalesOrderStatus = (typeof SALES_ORDER_STATUSES)[number];

export const SALES_ORDER_OPERATIONS = ['fulfill', 'cancel', 'reserve'] as const;
export type SalesOrderOperation = (typeof SALES_ORDER_OPERATIONS)[number];

export const SALES_ORDER_TRANSITIONS: TransitionTable<SalesOrderStatus, SalesOrderOperation> = {
  open: { fulfill: 'fulfilled', cancel: 'cancelled', reserve: 'open' },
  fulfilled: {},
  cancelled: {},
};

/** The event each operation that changes the status records, with the order as the API returns it after the change. */
export const SALES_ORDER_EVENTS: Partial<Record<SalesOrderOperation, EventType>> = {
  fulfill: 'sales_order.fulfilled',
  cancel: 'sales_order.cancelled',
};
