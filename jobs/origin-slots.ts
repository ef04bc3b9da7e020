// A worker has a fixed number of job slots, and a delivery holds one for as long as its receiver takes to answer
// (up to WEBHOOK_TIMEOUT_MS). Left alone, one hanging receiver with a backlog fills every slot and every other
// subscription waits behind it. So each origin (scheme, host, port) gets at most a share of the slots. A delivery
// to an origin at its share waits briefly for a slot when that receiver answers quickly; when it answers slowly
// or not at all, the delivery goes back to the queue for a while, without an attempt, and the slot goes to
// someone else.
export type Slot = { release(): void } | { retryInMs: number };

export interface OriginSlots {
  /** A slot for a delivery to `origin`, or how long to wait before trying again. */
  take(origin: string): Promise<Slot>;
}

// How long a delivery waits in its job slot for a busy origin, and the age of the oldest request in flight beyond
// which an origin counts as slow (not worth waiting for).
const PATIENCE_MS = 250;

interface Origin {
  started: number[];
  waiting: Array<() => void>;
}

export function createOriginSlots(perOrigin: number, timeoutMs: number): OriginSlots {
  const origins = new Map<string, Origin>();

  const slot = (name: string, origin: Origin): Slot => {
    const at = performance.now();
    origin.started.push(at);
    return {
      release() {
        origin.started.splice(origin.started.indexOf(at), 1);
        origin.waiting.shift()?.();
        if (origin.started.length === 0 && origin.waiting.length === 0) origins.delete(name);
      },
    };
  };

  return {
    async take(name) {
      const deadline = performance.now() + PATIENCE_MS;
      for (;;) {
        // Looked up on every turn: the last release may have dropped the entry while this delivery waited.
        const origin = origins.get(name) ?? { started: [], waiting: [] };
        origins.set(name, origin);
        if (origin.started.length < perOrigin) return slot(name, origin);
        const now = performance.now();
        // Slots are taken in time order: the first is the oldest.
        const oldestAgeMs = now - origin.started[0]!;
        if (oldestAgeMs >= PATIENCE_MS || now >= deadline) {
          // Come back about when the oldest request has run as long again (nearly the timeout for a hanging
          // receiver, whose slots free only then); jitter spreads the backlog's returns.
          return { retryInMs: Math.round(Math.min(timeoutMs, Math.max(PATIENCE_MS, oldestAgeMs)) * (0.5 + Math.random())) };
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            origin.waiting.splice(origin.waiting.indexOf(wake), 1);
            resolve();
          }, deadline - now);
          const wake = () => { clearTimeout(timer); resolve(); };
          origin.waiting.push(wake);
        });
      }
    },
  };
}
