import { LoopwrightClient } from '../../../client/loopwright-client';
import type { ModelRule } from '../../../model-server/script';
import { startModelServer, type ModelServer } from '../../../model-server/server';
import { startWorkerProcess, stopWorkerProcesses } from '../../helpers/cli';
import { judgeSays, script, workerSays } from '../../helpers/scripts';
import { workerProcessEnv } from '../../helpers/temporal';
import { must } from '../../../common/must';

/**
 * A `loopwright worker` process killed (SIGKILL) while a model call is in flight, after the
 * endpoint already reported usage: the activity's last heartbeat holds that usage, the workflow
 * reads it from the heartbeat timeout, charges it, and retries the call on another worker.
 */
let model: ModelServer | undefined;

afterEach(async () => {
  await stopWorkerProcesses();
  await model?.close();
  model = undefined;
});

const USAGE = { input_tokens: 1000, output_tokens: 40, cache_read_input_tokens: 200, cache_creation_input_tokens: 50 };

test.each([
  [
    'after message_start (the input tokens)',
    'message_start',
    { inputTokens: 1_100, outputTokens: 21, cacheReadTokens: 200, cacheWriteTokens: 50 },
  ],
  [
    "after message_delta (the whole answer's usage)",
    'message_delta',
    { inputTokens: 1_100, outputTokens: 60, cacheReadTokens: 200, cacheWriteTokens: 50 },
  ],
] as const)(
  'kill -9 the worker %s: the usage the endpoint reported is charged, and the retry on another worker too',
  async (_, after, charged) => {
    const hang: ModelRule = {
      name: 'answers, then hangs',
      match: { role: 'worker', attempt: 1 },
      times: 1,
      fault: { kind: 'stall', after },
      reply: { content: [{ type: 'text', text: 'The crash is in add(): it subtracts.' }], usage: USAGE },
    } as ModelRule;
    model = await startModelServer({ script: script(hang, workerSays(1, 'a crash'), judgeSays(1, true)), port: 0 });
    const env = workerProcessEnv('usage-loss', model.url);
    const client = await LoopwrightClient.connect({ env });
    try {
      const first = await startWorkerProcess(env);
      // The idle limit is far above the 10 s heartbeat timeout: the lost worker, not the call's limit, ends this try.
      const { workflowId } = await client.run('evaluate-optimize', {
        task: 'Name the crash.',
        rubric: ['mentions a crash'],
        modelTimeouts: { idle: '5m' },
      });
      const sent = () => model!.requests[0]?.fault !== undefined;
      for (let i = 0; i < 300 && !sent(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(model.requests[0]).toMatchObject({
        rule: 'answers, then hangs',
        fault: `stall after ${after === 'message_start' ? 1 : 8} events`,
      });
      // Heartbeats are throttled to one a second (WORKER_TUNING): give the one that carries the usage time to leave.
      await new Promise((r) => setTimeout(r, 1_500));
      await first.stop('SIGKILL');
      const killedAt = Date.now();

      await startWorkerProcess(env);
      const record = await client.wait(workflowId);
      expect(record).toMatchObject({ state: 'completed', stopReason: 'passed' });
      expect(model.requests.filter((r) => r.role === 'worker').map((r) => r.rule)).toEqual([
        'answers, then hangs',
        'worker 1',
      ]);
      // Found lost by the heartbeat timeout (10 s), not by the call's limits or the activity's 11 minutes.
      const retried = must(model.requests.filter((r) => r.role === 'worker')[1], 'the worker call was retried');
      expect(Date.parse(retried.at) - killedAt).toBeLessThan(20_000);
      expect(record.usage.worker).toMatchObject(charged);
      const history = await client.temporal.workflow.getHandle(workflowId).fetchHistory();
      const timedOut = (history.events ?? []).filter((e) => e.activityTaskTimedOutEventAttributes);
      expect(timedOut).toHaveLength(1);
    } finally {
      await client.close();
    }
  },
  120_000,
);
