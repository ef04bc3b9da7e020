// `npm run test:faults`: real processes, a database that stops and restarts, crashes and scale-out. Slow, so not
// part of `npm test`; `.ci/run` runs both. One file at a time: they start several processes each.
export default {
  files: ['test/faults/**/*.test.ts'],
  extensions: ['ts'],
  timeout: '5m',
  concurrency: 1,
};
