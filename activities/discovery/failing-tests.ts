import type { DiscoveredItem } from '../../common/discovery';
import { testKey } from '../../common/test-key';
import { testId, type TestResult, type TestRunner } from '../../common/test-results';
import { pytestNodeId } from '../tests/test-names';

/**
 * The work items of a test run: one per failing test the runner reported (activities/tests/),
 * in its order, each with a stable key. A test that failed only because a test inside it failed
 * (node's parent tests, go's `TestA` of a failing `TestA/sub`) is left out: its failing leaves
 * are the items. An item is named the way runs were named before tests were identified by file:
 * the full name (`suite > test`; a top-level test is its own name), for pytest the node id
 * (`tests/test_math.py::TestDiv::test_zero`); a name that two failing tests share in different
 * files becomes `file > name`. A file that failed to load is one item named by the file.
 */
export function failingTestItems(run: { runner: TestRunner; results: TestResult[] }): DiscoveredItem[] {
  const failed = run.results.filter((t) => t.outcome === 'failed');
  const leaves = failed.filter(
    (t) => !failed.some((o) => o !== t && o.file === t.file && o.name.startsWith(`${t.name} > `)),
  );
  const nameOf = (t: TestResult) => (run.runner === 'pytest' ? pytestNodeId(t) : undefined) ?? t.name;
  const count = new Map<string, number>();
  for (const t of leaves) count.set(nameOf(t), (count.get(nameOf(t)) ?? 0) + 1);
  const seen = new Set<string>();
  const items: DiscoveredItem[] = [];
  for (const t of leaves) {
    const name = count.get(nameOf(t))! > 1 ? testId(t) : nameOf(t);
    if (seen.has(name)) continue;
    seen.add(name);
    items.push({ key: testKey(name), name });
  }
  return items;
}
