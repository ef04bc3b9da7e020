// The purchase-order life cycle, as the contract's table: checks, 409 messages, OpenAPI descriptions and the
// transition routes are all derived from it.
import type { EventType } from '../../../shared/events.ts';
import type { TransitionEvents, TransitionTable } from '../../framework/transitions.ts';

export const PURCHASE_ORDER_STATUSES = ['draft', 'confirmed', 'partially_received', 'on_hold', 'closed', 'cancelled'] as const;
export type PurchaseOrderStatus = (typeof PURCHASE_ORDER_STATUSES)[number];

/** `receive` is a receipt (POST /receipts); the others are POST /purchase-orders/{id}/<operation>. */
export const PURCHASE_ORDER_OPERATIONS = ['confirm', 'hold', 'receive', 'close', 'cancel'] as const;
export type PurchaseOrderOperation = (typeof PURCHASE_ORDER_OPERATIONS)[number];

export const PURCHASE_ORDER_FACTS = {
  complete: 'once every line is received in full',
  received: 'once something was received',
} as const;
type Fact = keyof typeof PURCHASE_ORDER_FACTS;

const received = [{ to: 'closed', when: 'complete' }, { to: 'partially_received' }] as const;

export const PURCHASE_ORDER_TRANSITIONS: TransitionTable<PurchaseOrderStatus, PurchaseOrderOperation, Fact> = {
  draft: { confirm: 'confirmed', hold: 'on_hold', cancel: 'cancelled' },
  confirmed: { hold: 'on_hold', receive: received, close: 'closed', cancel: 'cancelled' },
  partially_received: { hold: 'on_hold', receive: received, close: 'closed', cancel: 'cancelled' },
  on_hold: { confirm: [{ to: 'partially_received', when: 'received' }, { to: 'confirmed' }], cancel: 'cancelled' },
  closed: {},
  cancelled: {},
};

/** Orders in these statuses are expected: what their lines still bring counts in `incoming` at their location. */
export const EXPECTED_STATUSES: ReadonlySet<PurchaseOrderStatus> = new Set(['confirmed', 'partially_received', 'on_hold']);

/** The event each operation records, with the order as the API returns it after the change. */
export const PURCHASE_ORDER_EVENTS: TransitionEvents<PurchaseOrderStatus, PurchaseOrderOperation, EventType> = {
  confirm: 'purchase_order.confirmed',
  hold: 'purchase_order.held',
  receive: { closed: 'purchase_order.closed', partially_received: 'purchase_order.partially_received' },
  close: 'purchase_order.closed',
  cancel: 'purchase_order.cancelled',
};
