import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { turnAnswers, turnCalls } from '../helpers/agent-scripts';
import { judgeSays } from '../helpers/scripts';
import { scriptedStacks } from '../helpers/temporal';
import { CORPUS_FAILING_TEST, createCorpusRepo } from './corpus-repo';

/**
 * `testChanges: human`: a fix that also edits an existing test is not failed by the change
 * policy but sent to a person, who sees why; approving the review lets the run go on to its
 * approval and commit; by default the same change fails the attempt.
 */
const setup = scriptedStacks();
let dir: string;
beforeAll(() => {
  dir = mkdtempSync('/var/tmp/lw-test-changes-');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BLOCK = `test('${CORPUS_FAILING_TEST}', () => {\n  check(add(2, 3), 5);\n});\n`;
const calls = (): Array<[string, Record<string, unknown>]> => [
  ['edit_file', { path: 'src/math.js', old_text: 'return a - b;', new_text: 'return a + b;' }],
  // An existing test changed (its name), and a regression test added.
  [
    'edit_file',
    {
      path: 'test/math.test.js',
      old_text: "test('multiply multiplies two numbers', () => {",
      new_text: "test('multiply multiplies two positive numbers', () => {",
    },
  ],
  [
    'edit_file',
    {
      path: 'test/math.test.js',
      old_text: BLOCK,
      new_text: `${BLOCK}\ntest('add handles negatives', () => {\n  check(add(-2, -3), -5);\n});\n`,
    },
  ],
];

test("a change to an existing test goes to a person's review with the reason; approved, the run goes on and commits", async () => {
  const { stack } = await setup(
    'test-changes',
    turnCalls(1, calls()),
    turnAnswers(2, 'Fixed add(); renamed a test.'),
    judgeSays(1, true),
  );
  const repo = createCorpusRepo(path.join(dir, 'human'));
  await stack.run(async () => {
    const { workflowId } = await stack.client.run('fix-test', {
      repo,
      testCommand: 'node --test',
      failingTest: CORPUS_FAILING_TEST,
      allowedPaths: ['src/', 'test/'],
      testChanges: 'human',
      maxAttempts: 1,
    });
    const review = await stack.client.wait(workflowId);
    expect(review).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'review' } });
    expect(review.escalation!.reason).toContain(
      'waits for review test changes: the change alters existing test infrastructure',
    );
    expect(review.escalation!.reason).toContain('test/math.test.js:5');
    expect(review.pendingReview!.verdicts.find((v) => v.check === 'change policy')).toMatchObject({ passed: true });
    await stack.client.decide(workflowId, { kind: 'approve', by: 'ada', note: 'the rename is fine' });
    const approval = await stack.client.wait(workflowId);
    expect(approval).toMatchObject({ state: 'awaiting_human', escalation: { kind: 'approval' } });
    expect(approval.attempts[0]?.verdicts.find((v) => v.check === 'test changes')).toMatchObject({
      kind: 'human',
      passed: true,
      by: 'ada',
    });
    await stack.client.decide(workflowId, { kind: 'approve', by: 'ada' });
    expect(await stack.client.wait(workflowId)).toMatchObject({ state: 'completed', stopReason: 'passed' });
  });
}, 120_000);

test('by default the same change fails the attempt (tests append-only)', async () => {
  const { stack } = await setup(
    'test-changes-fail',
    turnCalls(1, calls()),
    turnAnswers(2, 'Fixed add(); renamed a test.'),
    judgeSays(1, true),
  );
  const repo = createCorpusRepo(path.join(dir, 'fail'));
  const record = await stack.run(async () =>
    stack.client.wait(
      (
        await stack.client.run('fix-test', {
          repo,
          testCommand: 'node --test',
          failingTest: CORPUS_FAILING_TEST,
          allowedPaths: ['src/', 'test/'],
          maxAttempts: 1,
        })
      ).workflowId,
    ),
  );
  expect(record).toMatchObject({ state: 'awaiting_human', stopReason: 'attempts' });
  expect(record.attempts[0]?.verdicts.find((v) => v.check === 'change policy')!.failedItems).toEqual([
    'tests append-only',
  ]);
}, 120_000);
