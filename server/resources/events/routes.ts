import { listOf, nextLink, pageRequest } from '../../framework/pagination.ts';
import { defineRoute } from '../../framework/route.ts';
import { listEvents, parseTypes } from './queries.ts';
import { Event, EventListQuery } from './schema.ts';

export const eventRoutes = [
  defineRoute({
    method: 'get', path: '/events', operationId: 'listEvents', tag: 'Events',
    summary: 'List events (for polling)',
    description: 'Your account\'s events, oldest first, for clients that poll instead of receiving webhooks: pass the '
      + 'last id you received as `after` (or follow the `Link` header) and you see every event exactly once, even one '
      + 'whose change committed late. Event ids are the `webhook-id` of their deliveries. Events are kept '
      + '`EVENT_RETENTION_DAYS` (30 by default): polling from an event that has since been deleted is a 410.',
    query: EventListQuery,
    success: { status: 200, description: 'A page of events', schema: listOf(Event), list: true },
    errors: {
      410: 'The `after` event was deleted after the retention period (`retentionDays`; `prunedThrough` is when the newest '
        + 'deleted event was made): events may have been missed, so resynchronise from the lists and poll again without `after`',
    },
    handler: async ({ db, auth, query, ctx, config }) => {
      const page = pageRequest(query);
      const events = await listEvents(db, auth.accountId, { after: query.after, types: parseTypes(query.types) }, page, config.eventRetentionDays);
      const last = events.at(-1);
      const body = { data: events, page: page.page, limit: page.limit };
      if (events.length < page.limit || !last) return { status: 200, body };
      const params = new URLSearchParams(ctx.querystring);
      for (const name of ['page', 'size']) params.delete(name);
      params.set('after', last.id);
      params.set('limit', String(page.limit));
      return { status: 200, body, headers: nextLink(ctx, params, config.publicUrl) };
    },
  }),
];
