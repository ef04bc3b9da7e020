// `npm run lint:openapi`: the generated OpenAPI document, written to a temporary file, through Spectral
// (spectral:oas) and Redocly (recommended-strict). Any error or warning of either fails it. Both run offline.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiDocument } from '../server/api-document.ts';

const dir = mkdtempSync(join(tmpdir(), 'stockroom-openapi-'));
const file = join(dir, 'openapi.json');
writeFileSync(file, JSON.stringify(apiDocument(), null, 2));

const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
const linters = [
  ['node_modules/.bin/spectral', 'lint', file, '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'],
  ['node_modules/.bin/redocly', 'lint', file, '--config', 'redocly.yaml'],
];
let failed = false;
try {
  for (const [command, ...args] of linters) {
    const { status } = spawnSync(command!, args, { stdio: 'inherit', env });
    failed ||= status !== 0;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
