// `npm run bench:webhooks`: the webhook delivery scenario alone (bench/webhook-delivery.ts), 10,000 events x 2
// subscriptions by default. `npm run bench` runs it too, with the API scenarios.
import { parseArgs } from 'node:util';
import { startScratchServer } from '../test/helpers/database.ts';
import { runWebhookBench } from './webhook-delivery.ts';

const { values } = parseArgs({ options: {
  events: { type: 'string', default: '10000' },
  idle: { type: 'string', default: '200' },
  concurrency: { type: 'string', default: '' },
} });

const ms = (value: number) => `${value.toFixed(1)} ms`;
const server = await startScratchServer('bench');
const result = await runWebhookBench({
  adminUrl: server.adminUrl,
  events: Number(values.events),
  idleEvents: Number(values.idle),
  workerConcurrency: values.concurrency || undefined,
  log: (line) => process.stdout.write(`${line}\n`),
});
await server.stop();

const rows: Array<[string, string]> = [
  ['backlog drained', result.drained ? 'yes' : 'NO (timed out)'],
  ['deliveries/s', String(result.deliveriesPerSecond)],
  ['worker start to first delivery', ms(result.workerStartToFirstMs)],
  ['commit-to-delivery under backlog p50 / p99', `${ms(result.backlogP50Ms)} / ${ms(result.backlogP99Ms)}`],
  ['commit-to-delivery, idle queue p50 / p99', `${ms(result.idleP50Ms)} / ${ms(result.idleP99Ms)}`],
  ['lost', String(result.lost)],
  ['doubled', String(result.doubled)],
  ['delivery log rows', `${result.logRows} (expected ${result.expectedLogRows})`],
  ['worker peak RSS', result.workerPeakRssMb === null ? 'n/a' : `${result.workerPeakRssMb} MB`],
];
const width = Math.max(...rows.map(([label]) => label.length));
process.stdout.write(`\nWebhook delivery, ${result.events} events x ${result.subscriptions} subscriptions, local receiver\n`);
for (const [label, value] of rows) process.stdout.write(`  ${label.padEnd(width)}  ${value}\n`);
process.exit(result.lost === 0 && result.doubled === 0 && result.drained ? 0 : 1);
