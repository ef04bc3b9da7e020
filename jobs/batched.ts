// Group commit for the worker's statements. Each job's task asks for one row's worth of work (claim this event's
// deliveries, record this attempt); the calls made while a statement is being written wait and go to PostgreSQL
// together as the next one. Idle, a call goes out on the next turn of the event loop, so nothing waits for a
// timer; under load, each statement carries every call that queued behind the one before, and PostgreSQL plans,
// runs and commits once for dozens of deliveries.

interface Waiting<I, O> {
  input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/**
 * `run` gets the inputs of a batch (at most `maxBatch`) and answers with one output for each, in the same order.
 * If it fails, every call of that batch fails with its error. One batch runs at a time.
 */
export function batched<I, O>(run: (inputs: I[]) => Promise<O[]>, maxBatch: number): (input: I) => Promise<O> {
  const queue: Array<Waiting<I, O>> = [];
  let busy = false;

  const flush = async () => {
    const batch = queue.splice(0, maxBatch);
    try {
      const outputs = await run(batch.map((waiting) => waiting.input));
      batch.forEach((waiting, i) => waiting.resolve(outputs[i]!));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
    if (queue.length > 0) void flush();
    else busy = false;
  };

  return (input) => new Promise<O>((resolve, reject) => {
    queue.push({ input, resolve, reject });
    if (busy) return;
    busy = true;
    setImmediate(flush);
  });
}
