import pg from 'pg';

/**
 * The statements the test process sends to PostgreSQL while `run` runs, but those of the key lookup and the rate
 * limit: run it in a serial test, so that every statement seen is the request's.
 */
export async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    texts.push(typeof config === 'string' ? config : (config as { text: string }).text);
    return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
  } as typeof query;
  try {
    await run();
  } finally {
    pg.Client.prototype.query = query;
  }
  return texts.filter((text) => !/api_keys|rate_limits/.test(text));
}
