import { randomBytes } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import * as runIds from '../../client/run-id';
import { RunAlreadyExistsError } from '../../common/errors';
import { judgeSays, workerSays } from '../helpers/scripts';
import { scriptedStacks } from '../helpers/temporal';

/**
 * A generated run id can meet another run's (its second and 16 random bits): CI once failed on
 * it. `run` then draws a fresh id; an id the user chose is still refused. On the real dev server.
 */
const setup = scriptedStacks();
const INPUT = { task: 'Name the crash.', rubric: ['mentions a crash'] };

afterEach(() => jest.restoreAllMocks());

test('a generated id another run holds is drawn again; a chosen one is refused', async () => {
  const { stack } = await setup('run-start', workerSays(1, 'a crash'), judgeSays(1, true));
  const taken = `evaluate-optimize/taken-${randomBytes(4).toString('hex')}`;
  await stack.run(async () => {
    const first = await stack.client.run('evaluate-optimize', INPUT, { id: taken });
    const draws = jest.spyOn(runIds, 'newRunId').mockReturnValueOnce(taken).mockReturnValueOnce(taken);
    const second = await stack.client.run('evaluate-optimize', INPUT);
    try {
      expect(draws).toHaveBeenCalledTimes(3);
      expect(second.workflowId).not.toBe(taken);
      expect(second.workflowId).toMatch(/^evaluate-optimize\/\d{8}-\d{6}-[0-9a-f]{4}$/);
      await expect(stack.client.run('evaluate-optimize', INPUT, { id: taken })).rejects.toThrow(RunAlreadyExistsError);
    } finally {
      for (const id of [first.workflowId, second.workflowId])
        await stack.client.temporal.workflow.getHandle(id).terminate('test over');
    }
  });
});

test('startUnderFreshId gives up after its draws and lets other errors through at once', async () => {
  const held = () => Promise.reject(new WorkflowExecutionAlreadyStartedError('held', 'id', 'type'));
  const start = jest.fn(held);
  await expect(runIds.startUnderFreshId(() => 'id', start)).rejects.toThrow(WorkflowExecutionAlreadyStartedError);
  expect(start).toHaveBeenCalledTimes(runIds.GENERATED_ID_DRAWS);
  const broken = jest.fn(() => Promise.reject(new Error('unavailable')));
  await expect(runIds.startUnderFreshId(() => 'id', broken)).rejects.toThrow('unavailable');
  expect(broken).toHaveBeenCalledTimes(1);
});
