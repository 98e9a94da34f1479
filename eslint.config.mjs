// ESLint: type-aware rules for promises everywhere, a determinism fence around workflows/ and common/,
// no import cycles, and one fence per layer so that the layers point one way (see README.md, Layout):
//
//   common <- loops <- server <- crypto <- trace <- activities <- workers <- client <- scripts
//   common <- model-server;  common <- workflows (activity *types* only) <- harness <- activities
//
// Each top-level folder's README.md says what lives there and what it may import.
import importPlugin from 'eslint-plugin-import';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'readline',
  'stream',
  'timers',
  'tls',
  'url',
  'util',
  'v8',
  'vm',
  'worker_threads',
  'zlib',
];

const layers = [
  'activities',
  'client',
  'common',
  'crypto',
  'harness',
  'loops',
  'model-server',
  'scripts',
  'server',
  'trace',
  'workers',
  'workflows',
  'test',
];

/**
 * A pattern that matches a relative import of the top-level folder `name` (or a file in it) from a
 * file `depth` folders below the root, so `workflows/improve/` importing `../harness/...` (the
 * harness workflow's folder) is not taken for the top-level `harness/`.
 */
const layer = (name, depth) => `^(\\.\\./){${depth}}${name}(/|$)`;

/** Files are fenced this many folders deep at most (workflows/loop/x.ts is 2, activities/checks/tests/x.ts 3). */
const MAX_DEPTH = 6;

/** The no-restricted-imports patterns that keep `from` off every layer it may not import. */
function fenceOf(from, mayImport, depth) {
  return layers
    .filter((name) => name !== from && !mayImport.includes(name))
    .map((name) => ({
      regex: layer(name, depth),
      message: `${from}/ may not import ${name}/: see ${from}/README.md for what it may import.`,
    }));
}

const deterministic = 'workflows/ and common/ must stay deterministic: do I/O in an activity.';
const deterministicPaths = [
  ...nodeBuiltins.map((name) => ({ name, message: deterministic })),
  ...nodeBuiltins.map((name) => ({ name: `node:${name}`, message: deterministic })),
  { name: '@anthropic-ai/sdk', message: 'Model calls belong in activities/model.ts.' },
  { name: '@temporalio/worker', message: 'Workflow code may import only @temporalio/workflow.' },
  { name: '@temporalio/client', message: 'Workflow code may import only @temporalio/workflow.' },
  { name: '@temporalio/activity', message: 'Workflow code may import only @temporalio/workflow.' },
];

/**
 * The fence of one folder: its files may import only the layers in `mayImport` (and themselves).
 * One config block per depth below the root, since a relative import names a layer by how far it goes up.
 */
function fence(from, mayImport, { paths = [], patterns = () => [], ignores = [] } = {}) {
  return Array.from({ length: MAX_DEPTH }, (_, i) => i + 1).map((depth) => ({
    files: [`${from}/${'*/'.repeat(depth - 1)}*.ts`],
    ignores,
    rules: {
      'no-restricted-imports': ['error', { paths, patterns: [...patterns(depth), ...fenceOf(from, mayImport, depth)] }],
    },
  }));
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.loopwright/**', 'coverage/**', '**/*.js', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.base],
    plugins: { import: importPlugin },
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    settings: {
      'import/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import/resolver': { node: { extensions: ['.ts', '.js', '.json'] } },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // A cycle of value imports (type-only imports are erased and do not count).
      'import/no-cycle': ['error', { ignoreExternal: true }],
      // A type is imported as one, so what a module needs at run time is visible in its imports.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // Imports in groups: Node built-ins, packages, then parent and sibling files. A side-effect import (`import './x'`)
      // is never moved, nor are imports moved across it, so the fix cannot reorder what such a module relies on.
      'import/order': ['error', { warnOnUnassignedImports: false }],
    },
  },
  // Pure and deterministic: replayed by workflows, shared by every side.
  fence('common', [], { paths: deterministicPaths }),
  // Workflow code is replayed: it must not reach the outside world or the model SDK directly, and it
  // imports activities as types only (for proxyActivities).
  fence('workflows', ['common', 'activities'], {
    paths: deterministicPaths,
    patterns: (depth) => [
      {
        regex: layer('activities', depth),
        message: 'Import activity types only (import type).',
        allowTypeImports: true,
      },
    ],
  }),
  fence('loops', ['common']),
  fence('model-server', ['common']),
  fence('server', ['common']),
  fence('crypto', ['common', 'server']),
  fence('trace', ['common', 'crypto']),
  fence('harness', ['common', 'loops', 'workflows']),
  // activities import workflow functions for their names and types (visibility queries, typed results), never to run them.
  fence('activities', ['common', 'loops', 'server', 'crypto', 'trace', 'harness', 'workflows']),
  // The worker process; workers/main.ts is `loopwright worker` under its container name, so it runs the CLI.
  fence(
    'workers',
    ['common', 'loops', 'server', 'crypto', 'trace', 'harness', 'activities', 'workflows', 'model-server'],
    { ignores: ['workers/main.ts'] },
  ),
  fence('client', [
    'common',
    'loops',
    'server',
    'crypto',
    'trace',
    'harness',
    'activities',
    'workflows',
    'model-server',
    'workers',
  ]),
  fence('scripts', [
    'common',
    'loops',
    'server',
    'crypto',
    'trace',
    'harness',
    'activities',
    'workflows',
    'model-server',
    'workers',
    'client',
  ]),
);
