import { WorkflowNotFoundError } from '@temporalio/client';
import { LoopwrightClient } from '../../client/loopwright-client';
import { LoopItemKey, LoopName } from '../../common/search-attributes';
import type { ModelServer } from '../../model-server/server';
import { runCli } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { clientEnv, scriptedStacks, testAddress, uniqueQueue } from '../helpers/temporal';
import { must } from '../../common/must';

/** `loopwright event`: one run per key, duplicates reported, --force reruns a closed key. */
const setup = scriptedStacks();

const input = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ task: 'Say hi.', rubric: ['says hi'], ...extra });

/** Runs the built CLI against the test server and the stack's task queue; output split into lines. */
async function cli(
  s: { taskQueue: string },
  ...args: string[]
): Promise<{ code: number | null; stdout: string[]; stderr: string[] }> {
  const result = await runCli(args, {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: testAddress(),
    LOOPWRIGHT_TASK_QUEUE: s.taskQueue,
  });
  const lines = (text: string) => (text.trim() === '' ? [] : text.trimEnd().split('\n'));
  return { code: result.code, stdout: lines(result.stdout), stderr: lines(result.stderr) };
}

const workerCalls = (m: ModelServer, workflowId: string) =>
  m.requests.filter((r) => r.role === 'worker' && r.workflowId === workflowId).length;

describe('loopwright event on a real dev server', () => {
  test('a second delivery of the same key starts nothing and reports the first run as a duplicate; the model sees one worker call', async () => {
    const { model, stack: s } = await setup.with('event-dup', script(workerSays(1, 'hi'), judgeSays(1, true)));
    const id = 'evaluate-optimize/order:42/v1';
    await s.run(async () => {
      const first = await cli(s, 'event', 'evaluate-optimize', '--key', 'order:42/v1', '--input', input(), '--json');
      expect(first).toMatchObject({ code: 0, stderr: [] });
      expect(JSON.parse(must(first.stdout[0], 'the command prints a JSON line'))).toEqual({
        workflowId: id,
        duplicate: false,
      });

      const second = await cli(s, 'event', 'evaluate-optimize', '--key', 'order:42/v1', '--input', input(), '--json');
      expect(second.code).toBe(0);
      const dup = JSON.parse(must(second.stdout[0], 'the command prints a JSON line'));
      expect(dup).toMatchObject({ workflowId: id, duplicate: true });
      expect(['running', 'verifying', 'completed']).toContain(dup.state);

      expect((await s.client.wait(id)).state).toBe('completed');
      const third = await cli(s, 'event', 'evaluate-optimize', '--key', 'order:42/v1', '--input', input());
      expect(third.code).toBe(0);
      expect(third.stdout[0]).toBe(id);
      expect(third.stdout[1]).toMatch(new RegExp(`^already started: ${id} \\(state completed\\)`));
    });
    expect(workerCalls(model, id)).toBe(1);
    const description = await s.client.temporal.workflow.getHandle(id).describe();
    expect(description.typedSearchAttributes.get(LoopItemKey)).toBe('order:42/v1');
    expect(description.typedSearchAttributes.get(LoopName)).toBe('evaluate-optimize');
  });

  test('--force after the first run completed starts a second run with the same id; --force on a waiting run is refused with exit 2', async () => {
    const pass = 'evaluate-optimize/force-pass';
    const hold = 'evaluate-optimize/force-hold';
    const { model, stack: s } = await setup.with(
      'event-force',
      script(
        workerSays(1, 'hi', { name: 'pass worker', match: { workflowId: pass, role: 'worker' }, times: 2 }),
        judgeSays(1, true, [], '', { name: 'pass judge', match: { workflowId: pass, role: 'checker' }, times: 2 }),
        workerSays(1, 'no', { name: 'hold worker', match: { workflowId: hold, role: 'worker' } }),
        judgeSays(1, false, ['says hi'], 'Say hi.', {
          name: 'hold judge',
          match: { workflowId: hold, role: 'checker' },
        }),
      ),
    );
    await s.run(async () => {
      expect((await cli(s, 'event', 'evaluate-optimize', '--key', 'force-pass', '--input', input())).code).toBe(0);
      expect((await s.client.wait(pass)).state).toBe('completed');
      const firstRun = (await s.client.temporal.workflow.getHandle(pass).describe()).runId;

      const forced = await cli(
        s,
        'event',
        'evaluate-optimize',
        '--key',
        'force-pass',
        '--input',
        input(),
        '--force',
        '--json',
      );
      expect(forced.code).toBe(0);
      expect(JSON.parse(must(forced.stdout[0], 'the command prints a JSON line'))).toEqual({
        workflowId: pass,
        duplicate: false,
      });
      expect((await s.client.wait(pass)).state).toBe('completed');
      expect((await s.client.temporal.workflow.getHandle(pass).describe()).runId).not.toBe(firstRun);

      expect(
        (await cli(s, 'event', 'evaluate-optimize', '--key', 'force-hold', '--input', input({ maxAttempts: 1 }))).code,
      ).toBe(0);
      expect((await s.client.wait(hold)).state).toBe('awaiting_human');
      const refused = await cli(
        s,
        'event',
        'evaluate-optimize',
        '--key',
        'force-hold',
        '--input',
        input({ maxAttempts: 1 }),
        '--force',
      );
      expect(refused.code).toBe(2);
      expect(refused.stderr).toEqual([
        `error: run ${hold} is still running (state awaiting_human): cancel it first (\`loopwright cancel ${hold}\`) or wait for it to end, then deliver with --force`,
      ]);
      await s.client.cancel(hold);
    });
    expect(workerCalls(model, pass)).toBe(2);
    expect(workerCalls(model, hold)).toBe(1);
  });

  test.each([
    [
      'a key with a space',
      ['--key', 'has space', '--input', input()],
      /event key "has space" has characters that are not allowed \(" "\)/,
    ],
    [
      'a key of 201 characters',
      ['--key', 'k'.repeat(201), '--input', input()],
      /event key is 201 characters long: at most 200 are allowed/,
    ],
    [
      'input that fails the loop schema',
      ['--key', 'ok-key', '--input', '{"task":"x"}'],
      /invalid input for loop evaluate-optimize: rubric: /,
    ],
    ['a delivery without --input', ['--key', 'ok-key'], /missing --input/],
  ])('%s is refused with one error line and exit 2, and starts nothing', async (_name, args, message) => {
    const client = await LoopwrightClient.connect({ env: clientEnv() });
    try {
      const result = await cli({ taskQueue: uniqueQueue('event-bad') }, 'event', 'evaluate-optimize', ...args);
      expect(result.code).toBe(2);
      expect(result.stderr).toHaveLength(1);
      expect(result.stderr[0]).toMatch(message);
      await expect(client.temporal.workflow.getHandle('evaluate-optimize/ok-key').describe()).rejects.toThrow(
        WorkflowNotFoundError,
      );
    } finally {
      await client.close();
    }
  });
});
