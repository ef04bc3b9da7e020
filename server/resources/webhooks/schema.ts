import * as s from 'superstruct';
import { EVENT_TYPES } from '../../../shared/events.ts';
import { urlProblem } from '../../../shared/webhook-urls.ts';
import { listQuery } from '../../framework/pagination.ts';
import {
  array, boolean, describe, enums, id, integer, named, nullable, object, optional, text, timestamp, type Infer,
} from '../../framework/schema.ts';

export const DISABLED_REASONS = ['manual', 'gone', 'failing'] as const;
export const OUTCOMES = ['succeeded', 'failed'] as const;

const eventKind = describe(enums([...EVENT_TYPES, '*']), { description: 'An event kind, or `*` for all of them.' });

const events = describe(s.size(array(eventKind), 1, EVENT_TYPES.length + 1), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  description: 'The event kinds to receive; `["*"]` subscribes to every kind (not to `webhook.ping`, which goes only where asked).',
  example: ['sales_order.created', 'stock.adjusted'],
});

// The form of the URL is checked here, with the other fields; whether it may be used (https, a public
// address) depends on the deployment and on DNS, and is checked by the handler.
const url = describe(s.refine(text({ min: 1, max: 2048 }), 'url', (value) => urlProblem(value, { allowInsecure: true, ports: [] }) ?? true), {
  type: 'string',
  format: 'uri',
  minLength: 1,
  maxLength: 2048,
  description: 'A publicly reachable `https://` endpoint, without credentials. Names that resolve to loopback, private, '
    + 'link-local, CGNAT or metadata addresses are refused, at registration and again at every delivery.',
  example: 'https://example.com/hooks/stockroom',
});

const webhookFields = {
  id: id(),
  url: text(),
  events: array(eventKind),
  enabled: describe(boolean(), { type: 'boolean', description: 'Disabled subscriptions receive nothing.' }),
  disabledReason: nullable(describe(enums([...DISABLED_REASONS]), {
    description: '`manual` (PATCH enabled=false), `gone` (the receiver answered 410), `failing` (5 days of nothing but failures). `PATCH {"enabled": true}` re-enables.',
  })),
  createdAt: timestamp(),
  updatedAt: timestamp(),
};

export const Webhook = named('Webhook', object(webhookFields));
export type Webhook = Infer<typeof Webhook>;

/** Said in place of the secret when an Idempotency-Key retry replays an answer that showed one. */
export const SECRET_NOT_REPLAYED = 'The signing secret is shown only in the first answer and is not kept for retries: '
  + 'if it was lost, POST /webhooks/{id}/rotate-secret makes a new one.';

const secretFields = {
  secret: nullable(describe(text(), {
    description: 'The signing secret (`whsec_...`), shown only here and by rotate-secret: keep it to verify deliveries. '
      + '`null` when this is the replay of an earlier request with the same `Idempotency-Key` (see `notice`).',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })),
  notice: optional(describe(text(), { description: 'On a replay only: why `secret` is null and what to do.', example: SECRET_NOT_REPLAYED })),
};

/** The answer as it is replayed: the same, but for the secret, which is never kept. */
export const withoutSecret = <T extends { secret: string | null }>(answer: T) => ({ ...answer, secret: null, notice: SECRET_NOT_REPLAYED });

export const CreatedWebhook = named('CreatedWebhook', object({ ...webhookFields, ...secretFields }));

export const CreateWebhook = named('CreateWebhook', object({ url, events }));
export type CreateWebhook = Infer<typeof CreateWebhook>;

export const UpdateWebhook = named('UpdateWebhook', object({
  url: optional(url),
  events: optional(events),
  enabled: optional(describe(boolean(), { type: 'boolean', description: '`false` pauses deliveries (`disabledReason: "manual"`); `true` re-enables.' })),
}));
export type UpdateWebhook = Infer<typeof UpdateWebhook>;

export const WebhookListQuery = listQuery({});
export type WebhookListQuery = Infer<typeof WebhookListQuery>;

export const RotatedSecret = named('RotatedSecret', object({
  ...secretFields,
  previousSecretExpiresAt: timestamp('Until then every delivery is signed with both the new and the previous secret.'),
}));

export const Redeliver = named('Redeliver', object({ eventId: id('One of your account\'s events (see `GET /events`).') }));
export type Redeliver = Infer<typeof Redeliver>;

export const DeliveryQueued = named('DeliveryQueued', object({
  eventId: id('The event on its way; it is the `webhook-id` header of the delivery.'),
}));

export const WebhookDelivery = named('WebhookDelivery', object({
  id: id(),
  eventId: id(),
  eventType: text(),
  attempt: integer({ minimum: 1, description: 'The n-th attempt to deliver this event to this webhook.' }),
  outcome: enums([...OUTCOMES]),
  responseStatus: nullable(integer({ description: 'The receiver\'s HTTP status; null when no answer came.' })),
  error: nullable(text({ description: 'Why the attempt failed: a timeout, a refused connection, or the HTTP status.' })),
  durationMs: integer({ minimum: 0 }),
  responseBody: nullable(text({ description: 'The first kilobyte of what the receiver answered.' })),
  createdAt: timestamp(),
}));
export type WebhookDelivery = Infer<typeof WebhookDelivery>;

export const DeliveryListQuery = listQuery({
  eventId: optional(describe(text({ max: 64 }), { description: 'Only attempts for this event.' })),
  outcome: optional(describe(enums([...OUTCOMES]), { description: 'Only attempts with this outcome.' })),
});
export type DeliveryListQuery = Infer<typeof DeliveryListQuery>;
