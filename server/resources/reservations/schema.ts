import { isRecord } from '../../../shared/guards.ts';
import { RELEASE_REASONS, RESERVATION_STATUSES } from '../../../shared/stock.ts';
import { listQuery } from '../../framework/pagination.ts';
import {
  decimal, describe, enums, id, instant, named, nullable, object, oneOf, optional, text, timestamp, type Infer,
} from '../../framework/schema.ts';
import { StockLevelSnapshot } from '../stock/schema.ts';

const SalesOrderSource = named('SalesOrderReservationSource', object({
  type: describe(enums(['sales_order']), { description: 'Held for a line of a sales order.' }),
  id: id('The sales order.'),
  lineItemId: id('The line of the order.'),
}));
const ManualSource = named('ManualReservationSource', object({
  type: describe(enums(['manual']), { description: 'Held by hand (POST /reservations).' }),
}));
const source = describe(oneOf([SalesOrderSource, ManualSource], (value) => (isRecord(value) && value.type === 'manual' ? ManualSource : SalesOrderSource)), {
  description: 'What the stock is held for.',
});

export const Reservation = named('Reservation', object({
  id: id(),
  itemId: id(),
  locationId: id(),
  quantity: decimal({ sign: 'positive' }),
  status: describe(enums([...RESERVATION_STATUSES]), {
    description: '`open` holds stock; `consumed` went out with a fulfilment; `released` holds nothing any more.',
  }),
  source,
  reference: nullable(text({ description: 'Your own reference.' })),
  expiresAt: nullable(timestamp('When an open reservation is released by itself; null: it holds until released.')),
  releaseReason: nullable(describe(enums([...RELEASE_REASONS]), {
    description: 'Why it stopped holding stock: `fulfilled` (consumed), `cancelled` (its order was), `completed` (its order was fulfilled elsewhere), `expired`, `deleted`. Null while open.',
  })),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type Reservation = Infer<typeof Reservation>;

/** The `data` of `reservation.created` and `reservation.released`: the reservation and its level after the change. */
export const ReservationEvent = named('ReservationEvent', object({
  ...Reservation.schema,
  reason: optional(nullable(describe(enums([...RELEASE_REASONS]), { description: 'On `reservation.released`: why.' }))),
  stockLevel: StockLevelSnapshot,
}));

export const CreateReservation = named('CreateReservation', object({
  itemId: id('An item of your account, not archived.'),
  locationId: id('A location of your account: at least `quantity` must be available there (409 otherwise).'),
  quantity: decimal({ sign: 'positive', example: 2 }),
  reference: optional(nullable(text({ max: 255, description: 'Your own reference: a cart, a quote, a customer.' }))),
  expiresAt: optional(nullable(instant({
    future: true, example: '2026-12-01T09:00:00Z',
    description: 'Optional: the hold is released by itself within a minute of this time (`reservation.released`, reason `expired`).',
  }))),
}));
export type CreateReservation = Infer<typeof CreateReservation>;

export const ReservationListQuery = listQuery({
  itemId: optional(describe(text({ max: 64 }), { description: 'Only this item.' })),
  locationId: optional(describe(text({ max: 64 }), { description: 'Only this location.' })),
  status: optional(describe(enums([...RESERVATION_STATUSES]), { description: 'Only reservations in this status.' })),
  salesOrderId: optional(describe(text({ max: 64 }), { description: 'Only those held for this sales order.' })),
});
export type ReservationListQuery = Infer<typeof ReservationListQuery>;
