// A worker has a fixed number of job slots, and a delivery holds one for as long as its receiver takes to answer
// (up to WEBHOOK_TIMEOUT_MS). Left alone, one hanging receiver with a backlog fills every slot and every other
// subscription waits behind it. So each origin (scheme, host, port) gets at most a share of the slots; a delivery
// to an origin at its share goes back to the queue for a while, without an attempt, and the slot goes to someone
// else.
export type Slot = { release(): void } | { retryInMs: number };

export interface OriginSlots {
  /** A slot for a delivery to `origin`, or how long to wait before trying again. */
  take(origin: string): Slot;
}

// A receiver whose oldest request is this young is fast and only busy: come back soon.
const MIN_WAIT_MS = 100;

export function createOriginSlots(perOrigin: number, timeoutMs: number): OriginSlots {
  const inFlight = new Map<string, number[]>();
  return {
    take(origin) {
      const started = inFlight.get(origin) ?? [];
      if (started.length >= perOrigin) {
        // Wait about as long as the oldest request has been running: a few milliseconds for a busy fast receiver,
        // nearly the timeout for a hanging one (whose slots free only then). Jitter spreads the backlog's retries.
        const oldestAgeMs = performance.now() - Math.min(...started);
        return { retryInMs: Math.round(Math.min(timeoutMs, Math.max(MIN_WAIT_MS, oldestAgeMs)) * (0.5 + Math.random())) };
      }
      const at = performance.now();
      started.push(at);
      inFlight.set(origin, started);
      return {
        release() {
          started.splice(started.indexOf(at), 1);
          if (started.length === 0) inFlight.delete(origin);
        },
      };
    },
  };
}
