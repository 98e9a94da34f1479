// ESLint: type-aware rules for promises everywhere, and a determinism fence around workflows/.
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises',
  'http', 'http2', 'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers',
  'tls', 'url', 'util', 'v8', 'vm', 'worker_threads', 'zlib',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.loopwright/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
  {
    // Workflow code is replayed: it must not reach the outside world or the model SDK directly.
    files: ['workflows/**/*.ts', 'common/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...nodeBuiltins.map((name) => ({ name, message: 'workflows/ and common/ must stay deterministic: do I/O in an activity.' })),
          ...nodeBuiltins.map((name) => ({ name: `node:${name}`, message: 'workflows/ and common/ must stay deterministic: do I/O in an activity.' })),
          { name: '@anthropic-ai/sdk', message: 'Model calls belong in activities/model.ts.' },
          { name: '@temporalio/worker', message: 'Workflow code may import only @temporalio/workflow.' },
          { name: '@temporalio/client', message: 'Workflow code may import only @temporalio/workflow.' },
          { name: '@temporalio/activity', message: 'Workflow code may import only @temporalio/workflow.' },
        ],
        patterns: [{ group: ['@anthropic-ai/*', '../activities/*', '!../activities/index'], message: 'Import activity types only (import type).', allowTypeImports: true }],
      }],
    },
  },
);
