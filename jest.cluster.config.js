/**
 * `npm run test:cluster`: end-to-end scenarios and failure tests against the production
 * topology (PostgreSQL and Temporal's services as separate processes) that
 * test/cluster/global-setup.ts starts. One file at a time: the failure tests kill services
 * every test shares.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  testMatch: [
    '<rootDir>/test/workflows/loop/loop-workflow.test.ts',
    '<rootDir>/test/security/decisions.test.ts',
    '<rootDir>/test/triggers/schedules.test.ts',
    '<rootDir>/test/triggers/events.test.ts',
    '<rootDir>/test/workflows/loop/fix-test.test.ts',
    '<rootDir>/test/workflows/loop/lost-workers.test.ts',
    '<rootDir>/test/cluster/*.test.ts',
  ],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/cluster/global-setup.ts',
  globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
  // Left to npm test, to keep this suite near 8 minutes: the 200 parked runs (a load test), nine
  // kills of one worker in a row (one of two workers killed stays), and the gate's rejections
  // (decided by checks on the worker, not by the server).
  testNamePattern: '^(?!.*(200 parked runs|kill -9 the worker three times|candidates that skip the failing test))',
  testTimeout: 300000,
  maxWorkers: 1,
};
