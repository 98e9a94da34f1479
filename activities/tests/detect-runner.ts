import path from 'node:path';
import { ConfigError } from '../../common/errors';
import type { TestRunner } from '../../common/test-results';
import { must } from '../../common/must';

/** The test command's runner could not be told from the command: the loop must name it. */
export class UnknownTestRunnerError extends ConfigError {
  constructor(readonly command: string) {
    super(
      `cannot tell which test runner \`${command}\` runs: give it as \`runner\` (node, jest, vitest, pytest or go), ` +
        'or `runner: "junit"` with `junitPath` (the file or folder, relative to the repository, where the runner writes JUnit XML) ' +
        'for any other runner (see docs/test-runners.md)',
    );
  }
}

/** Commands that run the rest of their words: `npx jest`, `env CI=1 jest`, `poetry run pytest`, ... */
const WRAPPERS: Record<string, number> = {
  npx: 1,
  bunx: 1,
  env: 1,
  'cross-env': 1,
  time: 1,
  exec: 1,
  nice: 1,
  nohup: 1,
  command: 1,
};
const RUN_WRAPPERS = new Set(['uv', 'poetry', 'pipenv', 'hatch', 'pdm', 'rye']);
const PACKAGE_MANAGERS = new Set(['npm', 'yarn', 'pnpm', 'bun']);
const MAX_SCRIPT_DEPTH = 4;

/** The words of one simple command, with quotes removed (close enough to tell a runner apart). */
function words(segment: string): string[] {
  return (segment.match(/"[^"]*"|'[^']*'|\S+/g) ?? []).map((w) => w.replace(/^(["'])(.*)\1$/, '$2'));
}

/** `scripts[name]` of a package.json text, if it is a string. */
function script(packageJsonText: string | undefined, name: string): string | undefined {
  if (!packageJsonText) return undefined;
  try {
    const scripts = (JSON.parse(packageJsonText) as { scripts?: Record<string, unknown> }).scripts;
    const s = scripts?.[name];
    return typeof s === 'string' ? s : undefined;
  } catch {
    return undefined;
  }
}

/** The script a package-manager command runs (`npm test`, `npm run unit`, `yarn test`, `pnpm unit`), if any. */
function scriptName(w: string[]): string | undefined {
  const [pm, sub, arg] = w;
  if (pm === undefined || !PACKAGE_MANAGERS.has(pm) || !sub) return undefined;
  if (sub === 'test' || sub === 't' || sub === 'tst') return 'test';
  if (sub === 'run' || sub === 'run-script') return arg && !arg.startsWith('-') ? arg : undefined;
  // yarn, pnpm and bun run a script named like the subcommand (`yarn unit`); npm does not.
  return pm !== 'npm' && !sub.startsWith('-') ? sub : undefined;
}

function runnerOfWords(input: string[], packageJsonText: string | undefined, depth: number): TestRunner | undefined {
  let w = input.filter((x) => x !== '');
  for (;;) {
    while (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0] ?? '')) w = w.slice(1);
    const [first] = w;
    if (first === undefined) return undefined;
    const head = path.basename(first);
    if (WRAPPERS[head]) {
      w = w.slice(1);
      while (w[0]?.startsWith('-')) w = w.slice(1); // npx --yes, env -i, ...
      continue;
    }
    if (head === 'timeout') {
      w = w.slice(1);
      while (w[0]?.startsWith('-')) w = w.slice(1);
      if (/^\d/.test(w[0] ?? '')) w = w.slice(1); // the duration
      continue;
    }
    if (RUN_WRAPPERS.has(head) && w[1] === 'run') {
      w = w.slice(2);
      continue;
    }
    if ((head === 'pnpm' || head === 'yarn') && (w[1] === 'exec' || w[1] === 'dlx')) {
      w = w.slice(2);
      continue;
    }
    break;
  }
  const head = path.basename(must(w[0], 'the loop above breaks only with words left'));
  if (head === 'jest' || head === 'jest.js') return 'jest';
  if (head === 'vitest' || head === 'vitest.mjs') return 'vitest';
  if (head === 'pytest' || head === 'py.test') return 'pytest';
  if (/^python(\d(\.\d+)?)?$/.test(head) && w[1] === '-m' && w[2] === 'pytest') return 'pytest';
  if (head === 'go' && w[1] === 'test') return 'go';
  if (head === 'node' || head === 'nodejs') {
    if (w.includes('--test')) return 'node';
    const entry = w.slice(1).find((x) => !x.startsWith('-'));
    return entry ? runnerOfWords([entry, ...w.slice(w.indexOf(entry) + 1)], packageJsonText, depth) : undefined;
  }
  const name = scriptName(w);
  if (name && depth < MAX_SCRIPT_DEPTH) {
    const body = script(packageJsonText, name);
    return body === undefined ? undefined : runnerOfCommand(body, packageJsonText, depth + 1);
  }
  return undefined;
}

function runnerOfCommand(command: string, packageJsonText: string | undefined, depth: number): TestRunner | undefined {
  // The runner's flags are appended to the end of the command, so the last segment that names a runner decides.
  const segments = command.split(/&&|\|\||[;|\n&]/);
  for (const segment of segments.reverse()) {
    const found = runnerOfWords(words(segment), packageJsonText, depth);
    if (found) return found;
  }
  return undefined;
}

/**
 * The runner a test command runs, from the command itself (`node --test ...`, `jest`/`npx jest`,
 * `vitest`, `pytest`/`python -m pytest`, `go test ...`, through `npx`, `env`, `cross-env`,
 * `poetry run` and the like) or, for `npm test`, `npm run X`, `yarn test`, `pnpm test` and
 * `bun run X`, from that script in `packageJsonText` (the workspace's package.json). When the
 * command has several parts (`npm run build && jest`), the last one that names a runner decides.
 * Undefined when it cannot be told: the caller must then give the runner.
 */
export function detectRunner(command: string, packageJsonText?: string): TestRunner | undefined {
  return runnerOfCommand(command, packageJsonText, 0);
}
