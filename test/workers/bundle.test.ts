import { workflowBundleCode } from '../../workers/bundle';
import { must } from '../../common/must';

/**
 * The workflow sandbox evaluates its bundle's modules afresh for every run it starts or
 * replays, so what the bundle holds is paid per run in CPU and, for runs in the sticky cache,
 * in memory (zod and the schemas built on it were about 3 MB of heap per cached run). Workflows
 * check what reaches them with common/shape-check.ts; the edges validate with zod.
 */
const HEAVY = ['zod', '@anthropic-ai/sdk', 'yaml', 'fast-xml-parser', 'commander', 're2js'];

test('the workflow bundle holds none of the edge-only packages', async () => {
  const code = await workflowBundleCode({ encrypted: true });
  const modules = [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"$/gm)].map((m) =>
    must(m[1], 'the pattern has a module group'),
  );
  expect(modules.length).toBeGreaterThan(20);
  expect(modules.some((m) => m.includes('/workflows/loop/loop-workflow'))).toBe(true);
  const heavy = modules.filter((m) => HEAVY.some((pkg) => m.includes(`/node_modules/${pkg}/`)));
  expect(heavy).toEqual([]);
}, 120_000);
