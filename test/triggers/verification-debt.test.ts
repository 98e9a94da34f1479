import { randomBytes } from 'node:crypto';
import { runPresentation } from '../../common/run-presentation';
import { createSchedule, deleteSchedule, triggerSchedule } from '../../client/schedules';
import { LoopAttempt, LoopState } from '../../common/search-attributes';
import { loopWorkflow, loopWorkflowV2 } from '../../workflows/loop/loop-workflow';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { testStack, type TestStack } from '../helpers/temporal';

/** maxPendingReviews holding back a real Temporal Schedule while a run of the loop waits for a human. */
let model: ModelServer | undefined;
let stack: TestStack | undefined;
const scheduleId = `test-debt-${randomBytes(3).toString('hex')}`;

afterAll(async () => {
  await stack?.client.temporal.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  await stack?.close();
  await model?.close();
});

test('a scheduled run does not work while maxPendingReviews runs of its loop wait for a human, and says why', async () => {
  model = await startModelServer({
    script: script(workerSays(1, 'bad', { times: 4 }), judgeSays(1, false, ['r'], '', { times: 4 })),
    port: 0,
  });
  stack = await testStack('debt-schedule', model.url);
  const s = stack;
  const input = { task: 'T.', rubric: ['r'], maxAttempts: 1, maxPendingReviews: 2 };
  await s.run(async () => {
    // Two runs wait: one as clients start them now (loopWorkflowV2), one as they did before it
    // (loopWorkflow, still running somewhere): the debt counts both, and so does `list`.
    const first = await s.client.run('evaluate-optimize', input);
    const plan = s.client.plan('evaluate-optimize', input, { kind: 'client' });
    const older = await s.client.temporal.workflow.start(loopWorkflow, {
      taskQueue: s.taskQueue,
      workflowId: `debt-v1-${randomBytes(3).toString('hex')}`,
      args: [plan],
      ...runPresentation(plan),
    });
    const waiting = [first.workflowId, older.workflowId];
    for (const id of waiting) expect((await s.client.wait(id)).state).toBe('awaiting_human');
    // A run of the same loop that another deployment (task queue) has waiting for a human, or that
    // someone with CLI access started with search attributes that say so: not this one's debt.
    const elsewhere = await s.client.temporal.workflow.start(loopWorkflowV2, {
      taskQueue: `${s.taskQueue}-elsewhere`,
      workflowId: `debt-elsewhere-${randomBytes(3).toString('hex')}`,
      args: [plan],
      typedSearchAttributes: runPresentation(plan).typedSearchAttributes.map((p) =>
        p.key.name === LoopState.name ? { key: LoopState, value: 'awaiting_human' } : p,
      ),
    });
    const seen = `WorkflowId = '${elsewhere.workflowId}' AND LoopState = 'awaiting_human'`;
    for (let i = 0; i < 50 && (await s.client.temporal.workflow.count(seen)).count === 0; i++)
      await new Promise((r) => setTimeout(r, 200));
    expect((await s.client.temporal.workflow.count(seen)).count).toBe(1);
    const allListed = async () => {
      const listed = (await s.client.list({ state: 'awaiting_human', limit: 500 })).map((r) => r.workflowId);
      return waiting.every((id) => listed.includes(id));
    };
    for (let i = 0; i < 50 && !(await allListed()); i++) await new Promise((r) => setTimeout(r, 200));
    expect(await allListed()).toBe(true);
    const calls = model!.requests.length;
    await createSchedule(s.client, { loop: 'evaluate-optimize', input, every: '1h', id: scheduleId });
    const runId = await triggerSchedule(s.client, scheduleId);
    expect(runId).toMatch(/^evaluate-optimize\/scheduled/);
    const held = await s.client.wait(runId!);
    expect(held).toMatchObject({ state: 'blocked', stopReason: 'verification_debt', attempts: [] });
    expect(held.error).toMatch(
      /2 runs of loop evaluate-optimize wait for a human \(maxPendingReviews 2\); this schedule run did not start/,
    );
    expect(await s.client.workflowType(runId!)).toBe('loopWorkflowV2');
    // It started showing attempt 1 (runPresentation); held back before any attempt, it ends showing 0.
    const shown = (await s.client.temporal.workflow.getHandle(runId!).describe()).typedSearchAttributes;
    expect([shown.get(LoopState), shown.get(LoopAttempt)]).toEqual(['blocked', 0]);
    expect(model!.requests.length).toBe(calls);
    await deleteSchedule(s.client, scheduleId);
    for (const id of [...waiting, elsewhere.workflowId])
      await s.client.temporal.workflow.getHandle(id).terminate('test done');
  });
});
