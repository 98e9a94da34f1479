import { randomBytes } from 'node:crypto';
import { createSchedule, deleteSchedule, triggerSchedule } from '../../client/schedules';
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
    script: script(workerSays(1, 'bad', { times: 3 }), judgeSays(1, false, ['r'], '', { times: 3 })),
    port: 0,
  });
  stack = await testStack('debt-schedule', model.url);
  const s = stack;
  const input = { task: 'T.', rubric: ['r'], maxAttempts: 1, maxPendingReviews: 1 };
  await s.run(async () => {
    const first = await s.client.run('evaluate-optimize', input);
    expect((await s.client.wait(first.workflowId)).state).toBe('awaiting_human');
    for (
      let i = 0;
      i < 50 &&
      !(await s.client.list({ state: 'awaiting_human', limit: 500 })).some((r) => r.workflowId === first.workflowId);
      i++
    ) {
      await new Promise((r) => setTimeout(r, 200));
    }
    const calls = model!.requests.length;
    await createSchedule(s.client, { loop: 'evaluate-optimize', input, every: '1h', id: scheduleId });
    const runId = await triggerSchedule(s.client, scheduleId);
    expect(runId).toMatch(/^evaluate-optimize\/scheduled/);
    const held = await s.client.wait(runId!);
    expect(held).toMatchObject({ state: 'blocked', stopReason: 'verification_debt', attempts: [] });
    expect(held.error).toMatch(/maxPendingReviews 1\); this schedule run did not start/);
    expect(model!.requests.length).toBe(calls);
    await deleteSchedule(s.client, scheduleId);
    await s.client.temporal.workflow.getHandle(first.workflowId).terminate('test done');
  });
});
