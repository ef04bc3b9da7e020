// `npm run test:browser`: Swagger UI in headless Chromium against a real app. One throw-away PostgreSQL
// (DATABASE_URL's server, or an embedded one), an account and key, the web app on an ephemeral port; then the
// page must render with no internet, list the operations, accept the key and run "Try it out".
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import type { Knex } from 'knex';
import { createDb } from '../../db/knex.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { createApp } from '../../server/app.ts';
import { API_PREFIX } from '../../server/routes.ts';
import { createAccount, createApiKey } from '../../db/accounts.ts';
import { loadConfig } from '../../shared/config.ts';
import { createLogger } from '../../shared/logger.ts';
import { createDatabase, dropDatabase, startScratchServer, type ScratchServer } from '../helpers/database.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOT = '/tmp/swagger.png';
const TIMEOUT_MS = 20_000;
const EXPECTED_OPERATIONS = ['GET /items', 'POST /items', 'GET /inventory-items', 'GET /locations', 'GET /customers'];
// The Swagger UI template links a Google Fonts stylesheet; the page must render without it.

class CheckFailed extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

function pass(message: string): void {
  process.stdout.write(`✓ ${message}\n`);
}

/** Swagger UI puts zero-width spaces into paths so that they wrap. */
function clean(text: string | null): string {
  return (text ?? '').replace(/[\u200b\u00ad]/g, '').replace(/\s+/g, ' ').trim();
}

async function listedOperations(page: Page): Promise<string[]> {
  return page.locator('.opblock').evaluateAll((blocks) =>
    blocks.map((block) => {
      const method = block.querySelector('.opblock-summary-method')?.textContent ?? '';
      const pathElement = block.querySelector('.opblock-summary-path');
      const path = pathElement?.getAttribute('data-path') ?? pathElement?.textContent ?? '';
      return `${method.toUpperCase()} ${path}`;
    }),
  ).then((operations) => operations.map(clean));
}

function operationBlock(page: Page, method: string, path: string): Locator {
  return page
    .locator(`.opblock.opblock-${method.toLowerCase()}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
    .first();
}

/** Runs "Try it out" → "Execute" on an expanded operation and returns the live response's status and body. */
async function execute(block: Locator): Promise<{ status: string; body: string }> {
  const tryOut = block.locator('button.try-out__btn');
  if (clean(await tryOut.textContent()).toLowerCase() === 'try it out') await tryOut.click();
  const clear = block.locator('button.btn-clear');
  if (await clear.count()) await clear.click();
  await block.locator('button.execute').click();
  const row = block.locator('.responses-wrapper .live-responses-table tbody .response').first();
  await row.waitFor({ timeout: TIMEOUT_MS });
  const status = clean(await row.locator('.response-col_status').textContent());
  const body = clean(await row.locator('.response-col_description .highlight-code, .response-col_description pre').first().textContent());
  return { status, body };
}

let postgres: ScratchServer | undefined;
const scratch = `stockroom_browser_${process.pid}`;
let db: Knex | undefined;
let server: Server | undefined;
let browser: Browser | undefined;
let exitCode = 1;

try {
  if (!existsSync(CHROMIUM)) {
    throw new CheckFailed(
      `Chromium not found at ${CHROMIUM}. Install Debian's package (apt-get install chromium) or set CHROMIUM_PATH.`,
    );
  }

  postgres = await startScratchServer('browser');
  const databaseUrl = await createDatabase(postgres.adminUrl, scratch);
  await migrateLatest(databaseUrl);
  db = createDb(databaseUrl, 4);
  const { accountId } = await createAccount(db, 'Browser test', 'browser@example.com');
  const { key } = await createApiKey(db, { accountId, email: 'browser@example.com', label: 'swagger ui' });

  const config = { ...loadConfig({}), port: 0, host: '127.0.0.1' };
  const app = createApp({ db, config, logger: createLogger('silent') });
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  pass(`app listening on ${base}`);

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 1600 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);

  // Nothing may leave 127.0.0.1: every other request is refused and fails the check.
  const offHost: string[] = [];
  const failedLocal: string[] = [];
  const localStyles: string[] = [];
  const localScripts: string[] = [];
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  await context.route('**/*', async (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === 'data:' || url.protocol === 'blob:' || `${url.protocol}//${url.host}` === base) return route.continue();
    offHost.push(`${route.request().resourceType()} ${url.href}`);
    return route.abort('blockedbyclient');
  });
  page.on('requestfailed', (request) => {
    const url = new URL(request.url());
    if (`${url.protocol}//${url.host}` === base) failedLocal.push(`${request.url()}: ${request.failure()?.errorText}`);
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    const isDocs = url.pathname.startsWith(`${API_PREFIX}/docs/`) || url.pathname === `${API_PREFIX}/openapi.json`;
    if (`${url.protocol}//${url.host}` !== base || !isDocs) return;
    if (response.status() >= 400) failedLocal.push(`${response.url()}: HTTP ${response.status()}`);
    const type = response.request().resourceType();
    if (response.ok() && type === 'stylesheet') localStyles.push(url.pathname);
    if (response.ok() && type === 'script') localScripts.push(url.pathname);
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });

  const response = await page.goto(`${base}${API_PREFIX}/docs/swagger`, { waitUntil: 'load' });
  check(response?.status() === 200, `the Swagger UI page answered ${response?.status()}`);
  await page.locator('.swagger-ui .info .title').waitFor();
  await page.locator('.opblock').first().waitFor();
  check(offHost.length === 0, `the page asked for resources off 127.0.0.1:\n  ${offHost.join('\n  ')}`);
  check(failedLocal.length === 0, `local requests failed:\n  ${failedLocal.join('\n  ')}`);
  check(localStyles.some((url) => /swagger-ui[^/]*\.css$/.test(url)), `the Swagger UI stylesheet did not load from the app (${localStyles.join(', ') || 'no stylesheet'})`);
  check(localScripts.some((url) => /swagger-ui-bundle\.js$/.test(url)), 'swagger-ui-bundle.js did not load from the app');
  pass(`page rendered offline: "${clean(await page.locator('.swagger-ui .info .title').textContent())}"`);

  const renderErrors = await page.locator('.swagger-ui .errors-wrapper').allTextContents();
  check(renderErrors.length === 0, `Swagger UI shows errors: ${renderErrors.map(clean).join(' | ')}`);

  const operations = await listedOperations(page);
  const missing = EXPECTED_OPERATIONS.filter((operation) => !operations.includes(operation));
  check(missing.length === 0, `operations missing from the page: ${missing.join(', ')} (listed: ${operations.join(', ')})`);
  pass(`operations listed (${operations.length})`);

  const listItems = operationBlock(page, 'GET', '/items');
  await listItems.locator('.opblock-summary').first().click();
  await listItems.locator('button.try-out__btn').waitFor();

  // Before authorizing, the API refuses the request for want of a key.
  const anonymous = await execute(listItems);
  check(anonymous.status === '400', `Try it out GET /items without a key answered ${anonymous.status}, expected 400: ${anonymous.body}`);
  pass(`Try it out GET /items without a key → ${anonymous.status}`);

  await page.locator('.auth-wrapper button.authorize').click();
  const modal = page.locator('.dialog-ux .modal-ux');
  await modal.waitFor();
  await modal.locator('.auth-container').filter({ hasText: 'X-API-Key' }).locator('input').first().fill(key);
  await modal.locator('.auth-btn-wrapper button[aria-label="Apply credentials"]').click();
  await modal.locator('.auth-btn-wrapper button[aria-label="Remove authorization"]').waitFor();
  await modal.locator('.auth-btn-wrapper button.btn-done').click();
  await modal.waitFor({ state: 'detached' });
  check(await page.locator('.auth-wrapper button.authorize.locked').count() === 1, 'the Authorize button does not show as locked');
  pass('authorized with the X-API-Key');

  const authorized = await execute(listItems);
  check(authorized.status === '200', `Try it out GET /items answered ${authorized.status}, expected 200: ${authorized.body}`);
  check(authorized.body.includes('"data"'), `the GET /items response has no "data": ${authorized.body}`);
  pass(`Try it out GET /items → ${authorized.status}`);

  check(offHost.length === 0, `the page asked for resources off 127.0.0.1:\n  ${offHost.join('\n  ')}`);
  check(pageErrors.length === 0, `the page threw: ${pageErrors.join(' | ')}`);
  const unexpectedConsole = consoleErrors.filter((text) => !/ERR_BLOCKED_BY_CLIENT|status of 400/.test(text));
  if (unexpectedConsole.length) process.stdout.write(`! console errors: ${unexpectedConsole.join(' | ')}\n`);

  await listItems.scrollIntoViewIfNeeded();
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  pass(`screenshot saved to ${SCREENSHOT}`);
  exitCode = 0;
} catch (error) {
  const message = error instanceof CheckFailed ? error.message : error instanceof Error ? error.stack ?? error.message : String(error);
  process.stderr.write(`✗ ${message}\n`);
  if (browser) {
    const [page] = browser.contexts()[0]?.pages() ?? [];
    await page?.screenshot({ path: SCREENSHOT, fullPage: true }).then(
      () => process.stderr.write(`  screenshot of the failure saved to ${SCREENSHOT}\n`),
      () => {},
    );
  }
} finally {
  await browser?.close().catch(() => {});
  if (server) {
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  }
  await db?.destroy().catch(() => {});
  if (postgres) await dropDatabase(postgres.adminUrl, scratch).catch(() => {});
  await postgres?.stop().catch(() => {});
}
process.exit(exitCode);
