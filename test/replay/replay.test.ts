import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
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

/** The patches a history's markers name, and the activities it scheduled on the task queue or ran locally. */
function commandsOf(file: string): { patches: string[]; activities: string[]; localActivities: string[] } {
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
  const out = { patches: [] as string[], activities: [] as string[], localActivities: [] as string[] };
  const decode = (p: { data?: Uint8Array | null } | undefined) =>
    JSON.parse(Buffer.from(p?.data ?? new Uint8Array()).toString('utf8')) as Record<string, unknown>;
  for (const e of history.events ?? []) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_patch')
      out.patches.push(String(decode(marker.details?.['patch-data']?.payloads?.[0]).id));
    if (marker?.markerName === 'core_local_activity')
      out.localActivities.push(String(decode(marker.details?.data?.payloads?.[0]).activity_type));
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) out.activities.push(scheduled);
  }
  return out;
}

test('both ways a run reads its trust record are recorded: an activity before lean-start, a local activity since', () => {
  const before = commandsOf('replay-signed.json');
  expect(before.patches).toContain('trust');
  expect(before.activities).toContain('loadTrust');
  const since = commandsOf('replay-lean.json');
  expect(since.patches).toContain('lean-start');
  expect(since.patches).not.toContain('trust');
  expect(since.localActivities).toEqual(['loadTrust']);
  expect(since.activities).not.toContain('loadTrust');
});
