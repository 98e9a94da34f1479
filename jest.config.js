/** Jest: one real Temporal dev server and one workflow bundle per run (see test/global-setup.ts). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // test/cluster runs against the cluster that jest.cluster.config.js starts (npm run test:cluster).
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/cluster/'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 120000,
  maxWorkers: 2,
};
