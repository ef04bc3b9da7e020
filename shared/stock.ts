// The words of stock, shared by the API's schemas (server/) and the code that writes stock (db/stock.ts).
import type { JobSpec } from './events.ts';
import { isRecord } from './guards.ts';

export const MOVEMENT_TYPES = ['adjustment', 'transfer', 'purchase_receipt', 'production', 'sales_fulfillment', 'count'] as const;
export type MovementType = (typeof MOVEMENT_TYPES)[number];

/**
 * What caused a movement. Fulfilments and receipts are `sales_fulfillment` and `purchase_receipt`; the movements of
 * orders fulfilled or closed before those records existed name the order itself (`sales_order`, `purchase_order`).
 */
export const SOURCE_TYPES = [
  'stock_adjustment', 'stock_transfer', 'stock_count', 'purchase_receipt', 'production_record', 'sales_fulfillment', 'purchase_order', 'sales_order',
] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export const RESERVATION_STATUSES = ['open', 'consumed', 'released'] as const;
export type ReservationStatus = (typeof RESERVATION_STATUSES)[number];

/** Why a reservation stopped holding stock: `fulfilled` consumed it; the others released it. */
export const RELEASE_REASONS = ['cancelled', 'fulfilled', 'expired', 'deleted', 'completed'] as const;
export type ReleaseReason = (typeof RELEASE_REASONS)[number];

/** A level as every answer and event carries it. */
export interface LevelSnapshot {
  /** On hand: the sum of the movements. */
  quantity: number;
  /** The sum of the open reservations. */
  reserved: number;
  /** quantity - reserved: what can still be promised; negative when oversold. */
  available: number;
  /** Still to be received on confirmed, partially received or on-hold purchase orders. */
  incoming: number;
  oversold: boolean;
}

export interface MovementRecord {
  id: string;
  itemId: string;
  locationId: string;
  quantity: number;
  type: MovementType;
  reason: string | null;
  source: { type: SourceType; id: string };
  createdBy: string;
  createdAt: string;
}

export interface ReservationRecord {
  id: string;
  itemId: string;
  locationId: string;
  quantity: number;
  status: ReservationStatus;
  source: { type: 'sales_order'; id: string; lineItemId: string } | { type: 'manual' };
  reference: string | null;
  expiresAt: string | null;
  /** Why it stopped holding stock; null while open. */
  releaseReason: ReleaseReason | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** The graphile-worker task that releases a reservation when its `expiresAt` comes. */
export const EXPIRE_RESERVATION_TASK = 'reservations__expire';

export interface ExpireReservationPayload {
  reservationId: string;
}

export function isExpireReservationPayload(payload: unknown): payload is ExpireReservationPayload {
  return isRecord(payload) && typeof payload.reservationId === 'string';
}

/** The release of a reservation at its expiry: one per reservation. */
export const expiryJobKey = (reservationId: string): string => `reservation:${reservationId}`;

/** The job that releases a reservation at its expiry, run at that time. */
export function expiryJob(reservationId: string, expiresAt: string): JobSpec {
  return {
    identifier: EXPIRE_RESERVATION_TASK,
    payload: { reservationId } satisfies ExpireReservationPayload,
    job_key: expiryJobKey(reservationId),
    run_at: expiresAt,
  };
}
