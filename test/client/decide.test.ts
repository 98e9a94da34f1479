import { loopWorkflow } from '../../workflows/loop/loop-workflow';
import { runPresentation } from '../../common/run-presentation';
import { judgeSays, workerSays } from '../helpers/scripts';
import { scriptedStacks } from '../helpers/temporal';

/**
 * `decide` asks the server whether a worker polls the run's task queue before it sends a
 * decision: with none it says so and sends nothing; a queue seen polled is believed for a few
 * seconds, so a batch of decisions asks once.
 */
const setup = scriptedStacks();
const INPUT = { task: 'Write a haiku about crashes.', rubric: ['mentions a crash'], maxAttempts: 1 };
const always = { times: undefined };

test('a batch of approvals asks the server once whether a worker polls, and every approval is applied', async () => {
  const { stack } = await setup(
    'decide-batch',
    workerSays(1, 'no crash here', always),
    judgeSays(1, false, ['mentions a crash'], '', always),
  );
  await stack.run(async () => {
    const ids = await Promise.all(
      [1, 2, 3].map(async () => (await stack.client.run('evaluate-optimize', INPUT)).workflowId),
    );
    for (const id of ids) expect((await stack.client.wait(id)).state).toBe('awaiting_human');
    const service = stack.client.temporal.workflowService;
    const describeTaskQueue = jest.spyOn(service, 'describeTaskQueue');
    try {
      for (const id of ids)
        expect(await stack.client.decide(id, { kind: 'approve', by: 'ada' })).toMatchObject({ status: 'applied' });
      expect(describeTaskQueue).toHaveBeenCalledTimes(1);
    } finally {
      describeTaskQueue.mockRestore();
    }
    for (const id of ids) expect((await stack.client.wait(id)).state).toBe('completed');
  });
});

test('with no worker polling its queue, a decision is refused with a line that says what to do, and nothing is sent', async () => {
  const { stack } = await setup('decide-no-worker', workerSays(1, 'never asked'));
  // The stack's worker polls its own queue; the run is on one nobody polls.
  await stack.run(async () => {
    const plan = stack.client.plan('evaluate-optimize', INPUT, { kind: 'client' });
    const handle = await stack.client.temporal.workflow.start(loopWorkflow, {
      taskQueue: `nobody-${Date.now()}`,
      workflowId: `decide-no-worker-${Date.now()}`,
      args: [plan],
      ...runPresentation(plan),
    });
    try {
      await expect(stack.client.decide(handle.workflowId, { kind: 'approve', by: 'ada' })).rejects.toThrow(
        /^no worker polls task queue nobody-\d+, so run \S+ cannot take a decision now: start one with `npx loopwright worker`, then decide again \(nothing was sent\)$/,
      );
      const history = await handle.fetchHistory();
      expect(
        history.events?.some(
          (e) => e.workflowExecutionUpdateAdmittedEventAttributes || e.workflowExecutionUpdateAcceptedEventAttributes,
        ),
      ).toBe(false);
    } finally {
      await handle.terminate('test over');
    }
  });
});
