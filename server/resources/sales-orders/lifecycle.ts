// The sales-order life cycle as data: checks, 409 messages, OpenAPI descriptions and each transition's event are
// derived from it.
import type { EventType } from '../../../shared/events.ts';
import type { TransitionEvents, TransitionTable } from '../../framework/transitions.ts';

export const SALES_ORDER_STATUSES = ['open', 'partially_fulfilled', 'fulfilled', 'cancelled'] as const;
export type SalesOrderStatus = (typeof SALES_ORDER_STATUSES)[number];

/** `ship` is a fulfilment of some lines (POST /fulfillments); `fulfill` one of everything remaining. */
export const SALES_ORDER_OPERATIONS = ['fulfill', 'ship', 'cancel', 'reserve'] as const;
export type SalesOrderOperation = (typeof SALES_ORDER_OPERATIONS)[number];

export const SALES_ORDER_FACTS = { complete: 'once every line is fulfilled' } as const;
type Fact = keyof typeof SALES_ORDER_FACTS;

const shipped = [{ to: 'fulfilled', when: 'complete' }, { to: 'partially_fulfilled' }] as const;

export const SALES_ORDER_TRANSITIONS: TransitionTable<SalesOrderStatus, SalesOrderOperation, Fact> = {
  open: { fulfill: 'fulfilled', ship: shipped, cancel: 'cancelled', reserve: 'open' },
  partially_fulfilled: { fulfill: 'fulfilled', ship: shipped, cancel: 'cancelled', reserve: 'partially_fulfilled' },
  fulfilled: {},
  cancelled: {},
};

/** The event each operation records, with the order as the API returns it after the change. */
export const SALES_ORDER_EVENTS: TransitionEvents<SalesOrderStatus, SalesOrderOperation, EventType> = {
  fulfill: 'sales_order.fulfilled',
  ship: { fulfilled: 'sales_order.fulfilled', partially_fulfilled: 'sales_order.partially_fulfilled' },
  cancel: 'sales_order.cancelled',
};
