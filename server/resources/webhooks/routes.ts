import type { Knex } from 'knex';
import { dispatchTo, recordPing } from '../../../db/events.ts';
import { deliveryJob } from '../../../shared/events.ts';
import { webhookUrlProblem } from '../../../shared/webhook-urls.ts';
import { findOwned } from '../../framework/crud.ts';
import { NotFoundError } from '../../../shared/errors.ts';
import { listOf, pageReply, pageRequest, withRememberedStart } from '../../framework/pagination.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { accepted, created, defineRoute, noContent, ok, type Resolution, type RouteDeps, type RouteInput } from '../../framework/route.ts';
import {
  deleteWebhook, findWebhook, insertWebhook, listDeliveries, listWebhooks, rotateSecret, toDelivery, toWebhook, updateWebhook, type WebhookRow,
} from './queries.ts';
import {
  CreatedWebhook, CreateWebhook, DeliveryListQuery, DeliveryQueued, Redeliver, RotatedSecret, UpdateWebhook, Webhook,
  WebhookDelivery, WebhookListQuery, withoutSecret,
} from './schema.ts';

const tag = 'Webhooks';
const notFound = { 404: 'No such webhook in this account' } as const;

/**
 * The routes' `resolve`: an https URL at a public address, unless the deployment allows insecure URLs
 * (development and tests only). Reported in the same 400 as the body's other problems.
 */
async function checkUrl({ body, config, resolveHost }: RouteDeps & { body: unknown }): Promise<Resolution<undefined>> {
  const url = (body as { url?: unknown } | null)?.url;
  const problem = typeof url === 'string'
    ? await webhookUrlProblem(url, { allowInsecure: config.allowInsecureWebhookUrls, ports: config.webhookAllowedPorts, resolve: resolveHost })
    : null;
  return { problems: problem ? [{ path: 'url', message: problem }] : [], resolved: undefined };
}

async function requireWebhook(db: Knex, accountId: string, id: string | undefined): Promise<WebhookRow> {
  const webhook = await findWebhook(db, accountId, id ?? '');
  if (!webhook) throw new NotFoundError('Webhook');
  return webhook;
}

/** Handlers that encrypt secrets need the key; web and worker refuse to start without it. */
function secretKey(input: Pick<RouteInput<unknown, unknown>, 'config'>): Buffer {
  if (!input.config.encryptionKey) throw new Error('ENCRYPTION_KEY is not configured');
  return input.config.encryptionKey;
}

const webhooks = readRoutes({
  path: '/webhooks', tag, noun: 'webhook', record: Webhook, query: WebhookListQuery,
  list: listWebhooks, find: findWebhook, toRecord: toWebhook,
});

export const webhookRoutes = [
  defineRoute({
    method: 'post', path: '/webhooks', operationId: 'createWebhook', tag,
    summary: 'Subscribe an endpoint to events',
    description: 'Deliveries are signed Standard Webhooks POSTs (`webhook-id`, `webhook-timestamp`, `webhook-signature`). '
      + 'The answer carries the signing secret: it is shown only this once.',
    body: CreateWebhook,
    resolve: checkUrl,
    success: { status: 201, description: 'The subscription, with its signing secret', schema: CreatedWebhook },
    handler: async (input) => {
      const { row, secret } = await insertWebhook(input.db, input.auth.accountId, secretKey(input), input.body);
      const answer = { ...toWebhook(row), secret };
      return { ...created(answer), replay: withoutSecret(answer) };
    },
  }),

  webhooks.list,
  webhooks.get,

  defineRoute({
    method: 'patch', path: '/webhooks/{id}', operationId: 'updateWebhook', tag,
    summary: 'Change a webhook subscription',
    description: 'Only the fields sent change. `{"enabled": true}` re-enables a disabled subscription; events that '
      + 'happened while it was disabled are not sent (redeliver them from `GET /events`).',
    body: UpdateWebhook,
    resolve: checkUrl,
    success: { status: 200, description: 'The updated subscription', schema: Webhook },
    errors: notFound,
    handler: async (input) => {
      const row = await updateWebhook(input.db, input.auth.accountId, input.params.id ?? '', input.body);
      if (!row) throw new NotFoundError('Webhook');
      return ok(toWebhook(row));
    },
  }),

  defineRoute({
    method: 'delete', path: '/webhooks/{id}', operationId: 'deleteWebhook', tag,
    summary: 'Delete a webhook subscription',
    description: 'Deliveries stop at once; the subscription\'s delivery log goes with it.',
    success: { status: 204, description: 'Deleted' },
    errors: notFound,
    handler: async ({ db, auth, params }) => {
      if (!(await deleteWebhook(db, auth.accountId, (await requireWebhook(db, auth.accountId, params.id)).id))) throw new NotFoundError('Webhook');
      return noContent();
    },
  }),

  defineRoute({
    method: 'get', path: '/webhooks/{id}/deliveries', operationId: 'listWebhookDeliveries', tag,
    summary: 'List delivery attempts',
    description: 'Every attempt to deliver an event to this webhook, newest first: outcome, the receiver\'s status or '
      + 'the error, how long it took and the first kilobyte of its answer. Kept for 30 days.',
    query: DeliveryListQuery,
    success: { status: 200, description: 'A page of attempts', schema: listOf(WebhookDelivery), list: true },
    errors: notFound,
    handler: async ({ db, auth, params, query, ctx, config }) => {
      const webhook = await requireWebhook(db, auth.accountId, params.id);
      const page = withRememberedStart(ctx, pageRequest(query, { descending: true }));
      return pageReply(ctx, page, await listDeliveries(db, auth.accountId, webhook.id, query, page), toDelivery, config.publicUrl);
    },
  }),

  defineRoute({
    method: 'post', path: '/webhooks/{id}/ping', operationId: 'pingWebhook', tag,
    summary: 'Send a test event',
    description: 'Sends a `webhook.ping` event (`data: {"webhookId": ...}`) to this subscription alone, signed, logged and '
      + 'retried like any other. Ping events are not listed by `GET /events`.',
    success: { status: 202, description: 'The ping is on its way', schema: DeliveryQueued },
    errors: notFound,
    handler: async ({ db, auth, params }) => accepted(await db.transaction(async (trx) => {
      const webhook = await requireWebhook(trx, auth.accountId, params.id);
      const event = await recordPing(trx, auth.accountId, webhook.id);
      return { eventId: event.id };
    })),
  }),

  defineRoute({
    method: 'post', path: '/webhooks/{id}/redeliver', operationId: 'redeliverWebhookEvent', tag,
    summary: 'Deliver an event again',
    description: 'One more attempt to deliver one of your account\'s events to this subscription, whether or not it '
      + 'succeeded before, with the same `webhook-id`; it appears in the delivery log. It is not retried: if it fails, ask again.',
    body: Redeliver,
    success: { status: 202, description: 'The delivery is on its way', schema: DeliveryQueued },
    errors: { 404: 'No such webhook, or no such event, in this account' },
    handler: async ({ db, auth, params, body }) => accepted(await db.transaction(async (trx) => {
      const webhook = await requireWebhook(trx, auth.accountId, params.id);
      const event = await findOwned(trx, 'events', auth.accountId, body.eventId);
      if (!event) throw new NotFoundError('Event');
      await dispatchTo(trx, auth.accountId, webhook.id, event.id, deliveryJob({ webhookId: webhook.id, eventId: event.id, redelivery: true }));
      return { eventId: event.id };
    })),
  }),

  defineRoute({
    method: 'post', path: '/webhooks/{id}/rotate-secret', operationId: 'rotateWebhookSecret', tag,
    summary: 'Rotate the signing secret',
    description: 'Makes a new secret. For the next 24 hours every delivery carries two signatures (new and previous '
      + 'secret, space-separated in `webhook-signature`), so receivers can switch over without missing one; then the new one only.',
    success: { status: 200, description: 'The new secret, shown only this once', schema: RotatedSecret },
    errors: notFound,
    handler: async (input) => {
      const rotated = await rotateSecret(input.db, input.auth.accountId, input.params.id ?? '', secretKey(input));
      if (!rotated) throw new NotFoundError('Webhook');
      return { ...ok(rotated), replay: withoutSecret(rotated) };
    },
  }),
];
