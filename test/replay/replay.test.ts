import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { installRuntime } from '../../workers/runtime';

/**
 * Replays histories recorded from real runs (scripts/record-histories.ts) against today's
 * workflow bundle. A change to loopWorkflow that would break runs in flight fails here with a
 * nondeterminism error: guard it with patched() or record new histories on purpose.
 */
const dir = path.join(__dirname, 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

test('there are recorded histories to replay', () => {
  expect(files.length).toBeGreaterThanOrEqual(4);
});

test.each(files)('replays %s without nondeterminism', async (file) => {
  installRuntime();
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
  expect(history.events?.length ?? 0).toBeGreaterThan(10);
  await expect(
    Worker.runReplayHistory(
      { workflowBundle: { codePath: process.env.LOOPWRIGHT_WORKFLOW_BUNDLE! } },
      history,
      file.replace(/\.json$/, ''),
    ),
  ).resolves.toBeUndefined();
});
