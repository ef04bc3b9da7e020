// Webhook receivers for tests: nock interceptors that record what arrives and answer as the test says. Every
// delivery is checked against the OpenAPI document's `webhooks`, as every response is against its paths.
import nock from 'nock';
import { checkDelivery } from './contract.ts';

export { eventually } from './eventually.ts';

export interface Received {
  headers: Record<string, string>;
  body: string;
  payload: { id: string; type: string; createdAt: string; data: Record<string, unknown> };
}

type Answer = [status: number, body?: string, headers?: Record<string, string>];

export interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  stop(): void;
}

let hosts = 0;
/** Deliveries that broke the document; waitFor throws the first, so the test that waits for it fails. */
const mismatches: Error[] = [];

/** A receiver on a host of its own; `answer` is called with the 1-based number of each request. */
export function receiver(answer: (n: number, request: Received) => Answer | Promise<Answer> = () => [200, 'ok']): Receiver {
  const origin = `https://receiver-${process.pid}-${++hosts}.example.com`;
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const scope = nock(origin).persist().post('/hook').reply(async (request: Request) => {
    const body = await request.text();
    const entry = { headers: Object.fromEntries(request.headers), body, payload: JSON.parse(body) };
    try {
      checkDelivery(entry.payload);
    } catch (error) {
      mismatches.push(error as Error);
    }
    received.push(entry);
    for (const wake of waiters.splice(0)) wake();
    const [status, text = '', headers = {}] = await answer(received.length, entry);
    return [status, text, headers];
  });
  return {
    url: `${origin}/hook`,
    received,
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count || mismatches.length) {
        if (mismatches.length) throw mismatches.shift()!;
        if (Date.now() > deadline) throw new Error(`expected ${count} deliveries to ${origin}, got ${received.length}`);
        await new Promise<void>((resolve) => { waiters.push(resolve); setTimeout(resolve, 100); });
      }
      return received;
    },
    stop: () => scope.persist(false),
  };
}
