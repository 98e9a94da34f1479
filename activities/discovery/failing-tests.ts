import { testKey } from '../../common/test-key';
import type { DiscoveredItem } from '../../common/discovery';

// node:test TAP: `not ok 2 - name # directive`; node:test spec: `✖ name (2.4ms)`; jest: `✕ name (5 ms)`.
const TAP = /^(\s*)(not ok|ok) \d+ - (.*?)(?:\s+#\s+(.*))?$/;
const SPEC = /^(\s*)([✖✔]) (.*?)(?:\s+\([\d.]+\s*m?s\))?$/;
const JEST = /^\s*✕ (.*?)(?:\s+\(\d+(?:\.\d+)?\s*m?s\))?$/;
const PYTEST = /^FAILED (\S+::\S+?)(?:\s+-\s.*)?$/;

/**
 * The failing tests named in a test command's output, in the order they first appear, without
 * duplicates: node's test runner (TAP `not ok N - name`, spec `✖ name`), jest (`✕ name`) and
 * pytest (`FAILED path::name`). For node, a suite that fails only because its tests failed is
 * left out: its result line follows its (more indented) tests, so only leaves are kept.
 */
export function parseFailingTests(output: string): DiscoveredItem[] {
  const names: string[] = [];
  let lastTapIndent = -1;
  let lastSpecIndent = -1;
  for (const raw of output.split(/\r?\n/)) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '');
    const tap = TAP.exec(line);
    if (tap) {
      const indent = tap[1].length;
      // `# TODO` and `# SKIP` results are not failures.
      if (tap[2] === 'not ok' && indent >= lastTapIndent && !/^(todo|skip)\b/i.test(tap[4] ?? '')) names.push(tap[3]);
      lastTapIndent = indent;
      continue;
    }
    const spec = SPEC.exec(line);
    if (spec) {
      const indent = spec[1].length;
      if (spec[2] === '✖' && indent >= lastSpecIndent && spec[3] !== 'failing tests:') names.push(spec[3]);
      lastSpecIndent = indent;
      continue;
    }
    const jest = JEST.exec(line);
    if (jest) {
      names.push(jest[1]);
      continue;
    }
    const pytest = PYTEST.exec(line);
    if (pytest) names.push(pytest[1]);
  }
  const seen = new Set<string>();
  return names
    .map((n) => n.trim())
    .filter((n) => n && !seen.has(n) && seen.add(n))
    .map((name) => ({ key: testKey(name), name }));
}
