import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { installRuntime } from '../../workers/runtime';

/**
 * Replays histories recorded from real runs (scripts/record-histories.ts) against today's
 * workflow bundle. A change to a workflow that would break runs in flight fails here with a
 * nondeterminism error: guard it with patched() (or a new workflow type, as loopWorkflowV2), or
 * record new histories on purpose.
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

/**
 * The workflow type of a history, the patches its markers name, the activities it scheduled on the
 * task queue or ran locally, and the keys of each search-attribute upsert.
 */
function commandsOf(file: string) {
  const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
  const out = {
    type: history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name,
    patches: [] as string[],
    activities: [] as string[],
    localActivities: [] as string[],
    upserts: [] as string[][],
  };
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
    const upserted = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (upserted) out.upserts.push(Object.keys(upserted).sort());
  }
  return out;
}

test('loopWorkflowV2, what new runs are, asks no patch and sends no upsert that changes nothing', () => {
  const v2 = commandsOf('replay-v2.json');
  expect(v2.type).toBe('loopWorkflowV2');
  expect(v2.patches).toEqual([]);
  expect(v2.upserts.flat()).not.toContain('TemporalChangeVersion');
  // Its name, autonomy, first state and attempt came with the start: the first upsert is its
  // first state change, to verifying, with what the first model call cost.
  expect(v2.upserts[0]).toEqual(['LoopCostUsd', 'LoopState', 'LoopTokens']);
  expect(v2.upserts.flat()).not.toContain('LoopName');
  expect(v2.localActivities).toEqual(['loadTrust']);
  // The same path as loopWorkflow (replay-lean) has the patch's marker and its upsert.
  const v1 = commandsOf('replay-lean.json');
  expect(v1.type).toBe('loopWorkflow');
  expect(v1.patches).toEqual(['lean-start']);
  expect(v1.upserts[0]).toEqual(['TemporalChangeVersion']);
});

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
