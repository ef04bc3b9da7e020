// The purchase-order life cycle, as the contract's table: checks, 409 messages, OpenAPI descriptions and the
// four transition routes are all derived from it.
import type { EventType } from '../../../shared/events.ts';
import type { TransitionTable } from '../../framework/transitions.ts';

export const PURCHASE_ORDER_STATUSES = ['draft', 'confirmed', 'on_hold', 'closed', 'cancelled'] as const;
export type PurchaseOrderStatus = (typeof PURCHASE_ORDER_STATUSES)[number];

export const PURCHASE_ORDER_OPERATIONS = ['confirm', 'hold', 'close', 'cancel'] as const;
export type PurchaseOrderOperation = (typeof PURCHASE_ORDER_OPERATIONS)[number];

export const PURCHASE_ORDER_TRANSITIONS: TransitionTable<PurchaseOrderStatus, PurchaseOrderOperation> = {
  draft: { confirm: 'confirmed', hold: 'on_hold', cancel: 'cancelled' },
  confirmed: { hold: 'on_hold', close: 'closed', cancel: 'cancelled' },
  on_hold: { confirm: 'confirmed', cancel: 'cancelled' },
  closed: {},
  cancelled: {},
};

/** Orders in these statuses are expected: what their lines still bring counts in `incoming` at their location. */
export const EXPECTED_STATUSES: ReadonlySet<PurchaseOrderStatus> = new Set(['confirmed', 'on_hold']);

/** The event each operation records, with the order as the API returns it after the change. */
export const PURCHASE_ORDER_EVENTS: Record<PurchaseOrderOperation, EventType> = {
  confirm: 'purchase_order.confirmed',
  hold: 'purchase_order.held',
  close: 'purchase_order.closed',
  cancel: 'purchase_order.cancelled',
};
