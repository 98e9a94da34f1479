import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { workflowBundleCode } from '../../workers/bundle';
import { preloadModules } from '../../workers/preload';
import { bundleBuildId, workflowSource } from '../../workers/workflow-bundle';
import { must } from '../../common/must';

/**
 * The workflow sandbox evaluates its bundle's modules afresh for every run it starts or
 * replays (all but the preloaded ones, workers/preload.ts), so what the bundle holds is paid per run in CPU and, for runs in the sticky cache,
 * in memory (zod and the schemas built on it were about 3 MB of heap per cached run). Workflows
 * check what reaches them with common/shape-check.ts; the edges validate with zod.
 */
const HEAVY = ['zod', '@anthropic-ai/sdk', 'yaml', 'fast-xml-parser', 'commander', 're2js'];

/** The module ids of a webpack bundle. */
const modulesOf = (code: string) =>
  [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"$/gm)].map((m) => must(m[1], 'the pattern has a module group'));

/** The ids its `preloadModules` hook loads. */
const preloadedOf = (code: string) => {
  const hook = must(code.split('exports.preloadModules = function preloadModules() {')[1], 'a preload hook');
  return [...must(hook.split('\n}')[0], 'its body').matchAll(/\*\/ "([^"]+)"\)/g)].map((m) => must(m[1], 'an id'));
};

test('the workflow bundle holds none of the edge-only packages', async () => {
  const code = await workflowBundleCode({ encrypted: true });
  const modules = modulesOf(code);
  expect(modules.length).toBeGreaterThan(20);
  expect(modules.some((m) => m.includes('/workflows/loop/loop-workflow'))).toBe(true);
  const heavy = modules.filter((m) => HEAVY.some((pkg) => m.includes(`/node_modules/${pkg}/`)));
  expect(heavy).toEqual([]);
}, 120_000);

test('every common/ module the workflows import is preloaded, and nothing else of the project is', async () => {
  for (const encrypted of [false, true]) {
    const code = await workflowBundleCode({ encrypted });
    const common = modulesOf(code).filter((m) => /\/common\//.test(m) && !m.includes('node_modules'));
    expect(common.length).toBeGreaterThan(10);
    const preloaded = preloadedOf(code);
    // A common/ module that reaches the bundle unlisted is evaluated per run: list it in workers/preload.ts
    // (after checking it keeps no state), or keep it out of the workflows.
    expect([...preloaded].sort()).toEqual([...common].sort());
    expect(preloaded.filter((m) => /\/workflows\//.test(m))).toEqual([]);
  }
}, 240_000);

test('a worker without a prebuilt bundle bundles the sources with the same modules preloaded', () => {
  expect(workflowSource({ LOOPWRIGHT_WORKFLOW_BUNDLE: path.join(tmpdir(), 'no-such-bundle.js') })).toEqual({
    workflowsPath: require.resolve('../../workflows'),
    bundlerOptions: { preloadModules: preloadModules() },
  });
});

test('a prebuilt bundle comes with a short build id of its own code: another bundle, another id', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-bundle-'));
  try {
    const [a, b] = [path.join(dir, 'a.js'), path.join(dir, 'b.js')];
    writeFileSync(a, 'exports.a = 1;\n');
    writeFileSync(b, 'exports.a = 2;\n');
    const source = workflowSource({ LOOPWRIGHT_WORKFLOW_BUNDLE: a });
    expect(source).toEqual({ workflowBundle: { codePath: a }, buildId: bundleBuildId('exports.a = 1;\n') });
    expect('buildId' in source && source.buildId).toMatch(/^loopwright\+[0-9a-f]{12}$/);
    expect(workflowSource({ LOOPWRIGHT_WORKFLOW_BUNDLE: b })).not.toEqual(
      expect.objectContaining({ buildId: bundleBuildId('exports.a = 1;\n') }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
