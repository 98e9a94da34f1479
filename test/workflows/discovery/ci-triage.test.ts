import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { discoveryResult, startDiscovery } from '../../../client/discovery';
import { createSampleRepo, SAMPLE_FAILING_TEST } from '../../../loops/fixtures/sample-repo';
import { fileKey } from '../../../common/file-key';
import type { RunRecord } from '../../../common/run-record';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { judgeSays, script } from '../../helpers/scripts';
import { scriptedStacks } from '../../helpers/temporal';
import { mustTake } from '../../../common/must';

/**
 * ci-triage (L1) on a real repository with a real failing test: discovery starts one run per
 * failing test, the diagnosis is verified (citations + judge) and delivered as a report, and
 * work already done is not started again.
 */
const setup = scriptedStacks();

const KEY = 'add-adds-two-numbers';
// Workflow ids are `ci-triage/<repo basename>/<key>` on a server shared by every test: a basename of its own.
const sample = () =>
  createSampleRepo(path.join(mkdtempSync(path.join(tmpdir(), 'lw-triage-')), `repo-${randomBytes(4).toString('hex')}`));
const GOOD = `## ${SAMPLE_FAILING_TEST}\n\nCause: \`add\` subtracts (src/math.js:3).\n\nFix: return \`a + b\`.`;

test('discovery starts one triage run per failing test; its verified diagnosis becomes a report; a second discovery skips it as done', async () => {
  const { model, stack } = await setup.with(
    'ci-triage',
    script(turnCalls(1, [['read_file', { path: 'src/math.js' }]]), turnAnswers(2, GOOD), judgeSays(1, true)),
  );
  const s = stack;
  const repo = sample();
  const childId = `ci-triage/${path.basename(repo)}/${KEY}`;
  const { first, record, second, childHistory } = await s.run(async () => {
    const first = await discoveryResult(
      s.client,
      (await startDiscovery(s.client, 'ci-triage', { repo, testCommand: 'node --test' })).workflowId,
    );
    // The run's result, not just its terminal state: the trace report is written as it closes.
    const record: RunRecord = await s.client.temporal.workflow.getHandle(childId).result();
    const childHistory = await s.client.temporal.workflow.getHandle(childId).fetchHistory();
    const second = await discoveryResult(
      s.client,
      (await startDiscovery(s.client, 'ci-triage', { repo, testCommand: 'node --test' })).workflowId,
    );
    return { first, record, second, childHistory };
  });
  expect(first).toMatchObject({
    phase: 'done',
    items: [{ key: KEY, name: SAMPLE_FAILING_TEST }],
    started: [childId],
    skipped: [],
  });
  expect(record).toMatchObject({ state: 'completed', stopReason: 'passed', autonomy: 'L1', output: GOOD });
  // The run is a loopWorkflowV2 started with its search attributes: it never sends its name again.
  const [start, ...events] = childHistory.events ?? [];
  expect(start?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('loopWorkflowV2');
  expect(Object.keys(start?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {})).toEqual(
    expect.arrayContaining(['LoopName', 'LoopState', 'LoopAttempt', 'LoopAutonomy', 'LoopItemKey']),
  );
  const upserted = events.flatMap((e) =>
    Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
  );
  expect(upserted).not.toContain('LoopName');
  expect(upserted).not.toContain('TemporalChangeVersion');
  expect(record.attempts[0]?.verdicts.map((v) => [v.check, v.passed])).toEqual([
    ['citations', true],
    ['judge', true],
  ]);
  expect(record.attempts[0]?.toolCalls!.map((c) => [c.name, c.allowed])).toEqual([['read_file', true]]);
  const reportFile = path.join(repo, '.loopwright', 'reports', `${KEY}.md`);
  expect(record.effects).toEqual([
    expect.objectContaining({
      kind: 'report',
      name: 'report',
      path: reportFile,
      alreadyApplied: false,
      key: `${childId}/report/1`,
    }),
  ]);
  const report = readFileSync(reportFile, 'utf8');
  expect(report).toContain(`# ci-triage: ${SAMPLE_FAILING_TEST}`);
  expect(report).toContain(`run: \`${childId}\``);
  expect(report).toContain('src/math.js:3');
  expect(readFileSync(path.join(repo, '.loopwright', 'reports', 'index.md'), 'utf8')).toContain(
    `[ci-triage: ${SAMPLE_FAILING_TEST}](${KEY}.md)`,
  );
  // delivery.trace: the story of the run, written as it ended.
  const traceFile = path.join(repo, '.loopwright', 'traces', `${fileKey(childId)}.md`);
  expect(record.traceReport).toEqual({ path: traceFile, error: null });
  const story = readFileSync(traceFile, 'utf8');
  expect(story).toMatch(/^# ci-triage: /);
  expect(story).toContain(`\`${childId}\``);
  expect(story).toContain('completed (passed)');
  expect(story).toMatch(/read_file.*src\/math\.js/);
  expect(story).toMatch(/✅ \*\*citations\*\*/);
  expect(second).toMatchObject({
    items: [{ key: KEY }],
    started: [],
    skipped: [{ key: KEY, workflowId: childId, reason: 'already done' }],
  });
  expect(model.requests.filter((r) => r.role === 'worker')).toHaveLength(2);
});

test('a diagnosis citing a line that does not exist fails the citations check by name; a write call is denied at L1', async () => {
  const BAD = 'Cause: `add` subtracts (src/math.js:99).';
  const { model, stack } = await setup.with(
    'ci-triage-bad',
    script(
      turnCalls(1, [['write_file', { path: 'src/math.js', content: 'hacked' }]]),
      turnAnswers(2, BAD),
      judgeSays(1, true),
      turnAnswers(1, GOOD, {}, 2),
      judgeSays(2, true),
    ),
  );
  const s = stack;
  const repo = sample();
  // The run's result (not just its terminal state): the trace report is written as it closes.
  const record: RunRecord = await s.run(async () =>
    s.client.temporal.workflow
      .getHandle(
        (await s.client.run('ci-triage', { repo, testCommand: 'node --test', failingTest: SAMPLE_FAILING_TEST }))
          .workflowId,
      )
      .result(),
  );
  const [first, second] = mustTake(record.attempts, 2, 'the run has two attempts');
  expect(first.toolCalls).toEqual([expect.objectContaining({ name: 'write_file', allowed: false })]);
  expect(readFileSync(path.join(repo, 'src/math.js'), 'utf8')).toContain('return a - b;');
  const citations = first.verdicts.find((v) => v.check === 'citations')!;
  expect(citations).toMatchObject({ passed: false, failedItems: ['src/math.js:99'] });
  expect(citations.reason).toMatch(/bad citation src\/math\.js:99: src\/math\.js has 11 lines/);
  expect(first.passed).toBe(false);
  // the next attempt is told which citation was wrong, and its corrected diagnosis is delivered
  expect(model.requests.find((r) => r.role === 'worker' && r.attempt === 2)!.lastUser).toContain('src/math.js:99');
  expect(second.passed).toBe(true);
  expect(record).toMatchObject({ state: 'completed', output: GOOD });
  expect(existsSync(path.join(repo, '.loopwright', 'reports', `${KEY}.md`))).toBe(true);
  // The trace report tells the whole story: the denial and the failed citation of attempt 1.
  const story = readFileSync(record.traceReport!.path!, 'utf8');
  expect(story).toMatch(/\| write_file \| `src\/math\.js` \| denied: tool write_file is not available to this run/);
  expect(story).toMatch(/❌ \*\*citations\*\*[^\n]*bad citation src\/math\.js:99/);
  expect(story).toContain('## Attempt 2');
});

test('with maxPendingReviews reached, discovery starts no run for a new item and records the verification debt', async () => {
  const denied = { name: 'denied', match: { role: 'worker' }, error: { status: 401 } };
  const { stack } = await setup.with('ci-triage-debt', script(denied as never));
  const s = stack;
  const repo = sample();
  const childId = `ci-triage/${path.basename(repo)}/${KEY}`;
  const result = await s.run(async () => {
    // A run of the loop that waits for a human (its model key is refused, so it escalates).
    const waiting = await s.client.run('ci-triage', {
      repo,
      testCommand: 'node --test',
      failingTest: 'something else',
    });
    expect((await s.client.wait(waiting.workflowId)).state).toBe('awaiting_human');
    for (
      let i = 0;
      i < 50 &&
      !(await s.client.list({ state: 'awaiting_human', loop: 'ci-triage', limit: 500 })).some(
        (r) => r.workflowId === waiting.workflowId,
      );
      i++
    ) {
      await new Promise((r) => setTimeout(r, 200));
    }
    const held = await discoveryResult(
      s.client,
      (await startDiscovery(s.client, 'ci-triage', { repo, testCommand: 'node --test', maxPendingReviews: 1 }))
        .workflowId,
    );
    await s.client.temporal.workflow.getHandle(waiting.workflowId).terminate('test done');
    return held;
  });
  expect(result.started).toEqual([]);
  expect(result.skipped).toEqual([
    {
      key: KEY,
      workflowId: childId,
      reason: expect.stringMatching(
        /^verification debt: \d+ runs of ci-triage wait for a human \(maxPendingReviews 1\)$/,
      ),
    },
  ]);
  await expect(s.client.status(childId)).rejects.toThrow(/no run with id/);
});
