import type { Knex } from 'knex';
import { encrypt } from '../../../shared/encryption.ts';
import { generateSecret } from '../../../shared/webhook-secrets.ts';
import { normaliseUrl } from '../../../shared/webhook-urls.ts';
import { isUuid } from '../../../shared/guards.ts';
import { findOwned, listOwned, toColumns, updateOwned, whereId, type OwnedRow } from '../../framework/crud.ts';
import { fetchPage, type PageRequest } from '../../framework/pagination.ts';
import type { DeliveryListQuery, Webhook, WebhookDelivery } from './schema.ts';

export interface WebhookRow extends OwnedRow {
  url: string;
  events: Webhook['events'];
  enabled: boolean;
  disabled_reason: Webhook['disabledReason'];
  secret_encrypted: string;
}

export interface DeliveryRow extends OwnedRow {
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  outcome: WebhookDelivery['outcome'];
  response_status: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string | null;
}

/** The secret's previous value stays valid this long after a rotation. */
export const ROTATION_OVERLAP = '24 hours';

export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: row.attempt,
    outcome: row.outcome,
    responseStatus: row.response_status,
    error: row.error,
    durationMs: row.duration_ms,
    responseBody: row.response_body,
    createdAt: row.created_at,
  };
}

export const findWebhook = (db: Knex, accountId: string, id: string) => findOwned<WebhookRow>(db, 'webhooks', accountId, id);

export const listWebhooks = (db: Knex, accountId: string, _filters: unknown, page: PageRequest) =>
  listOwned<WebhookRow>(db, 'webhooks', accountId, page);

/** `*` stands for every kind, so it is kept alone; duplicates go. */
function normaliseKinds(events: string[]): string[] {
  return events.includes('*') ? ['*'] : [...new Set(events)];
}

export async function insertWebhook(db: Knex, accountId: string, key: Buffer, input: { url: string; events: string[] }): Promise<{ row: WebhookRow; secret: string }> {
  const secret = generateSecret();
  const [row] = await db('webhooks')
    .insert({ account_id: accountId, url: normaliseUrl(input.url), events: normaliseKinds(input.events), secret_encrypted: encrypt(key, secret) })
    .returning('*');
  return { row, secret };
}

export async function updateWebhook(
  db: Knex,
  accountId: string,
  id: string,
  patch: { url?: string; events?: string[]; enabled?: boolean },
): Promise<WebhookRow | undefined> {
  const { enabled, events, url, ...fields } = patch;
  const values: Record<string, unknown> = toColumns(fields);
  if (url !== undefined) values.url = normaliseUrl(url);
  if (events !== undefined) values.events = normaliseKinds(events);
  if (enabled === true) Object.assign(values, { enabled: true, disabled_reason: null, failing_since: null });
  // Disabling keeps the reason a subscription already has (`gone`, say).
  if (enabled === false) Object.assign(values, { enabled: false, disabled_reason: db.raw(`coalesce(disabled_reason, 'manual')`) });
  return updateOwned<WebhookRow>(db, 'webhooks', accountId, id, values);
}

export async function deleteWebhook(db: Knex, accountId: string, id: string): Promise<boolean> {
  return (await db('webhooks').where({ account_id: accountId, id }).delete()) === 1;
}

/** A new secret; the previous one keeps signing alongside it for ROTATION_OVERLAP. */
export async function rotateSecret(db: Knex, accountId: string, id: string, key: Buffer): Promise<{ secret: string; previousSecretExpiresAt: string } | undefined> {
  if (!isUuid(id)) return undefined;
  const secret = generateSecret();
  const [row] = await db('webhooks')
    .where({ account_id: accountId, id })
    .update({
      previous_secret_encrypted: db.ref('secret_encrypted'),
      previous_secret_expires_at: db.raw(`now() + interval '${ROTATION_OVERLAP}'`),
      secret_encrypted: encrypt(key, secret),
      updated_at: db.fn.now(),
    })
    .returning('previous_secret_expires_at');
  return row && { secret, previousSecretExpiresAt: row.previous_secret_expires_at };
}

export function listDeliveries(db: Knex, accountId: string, webhookId: string, filters: DeliveryListQuery, page: PageRequest): Promise<DeliveryRow[]> {
  const query = db('webhook_deliveries').where({ account_id: accountId, webhook_id: webhookId }).select('*');
  whereId(query, 'event_id', filters.eventId);
  if (filters.outcome !== undefined) query.where('outcome', filters.outcome);
  return fetchPage<DeliveryRow>(query, 'webhook_deliveries', page);
}
