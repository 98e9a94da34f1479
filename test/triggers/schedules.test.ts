import { randomBytes } from 'node:crypto';
import { LoopwrightClient } from '../../client/loopwright-client';
import { LoopName, LoopState } from '../../common/search-attributes';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { runCli } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { clientEnv, testAddress, testStack, uniqueQueue, type TestStack } from '../helpers/temporal';

/** `loopwright schedule ...` on Temporal Schedules, through the built CLI. */
let model: ModelServer | undefined;
let stack: TestStack | undefined;
let admin: LoopwrightClient;
/** Every schedule a test may have created; afterEach deletes those still there. */
const created = new Set<string>();

beforeAll(async () => {
  admin = await LoopwrightClient.connect({ env: clientEnv() });
});

afterEach(async () => {
  for (const id of created)
    await admin.temporal.schedule
      .getHandle(id)
      .delete()
      .catch(() => undefined);
  created.clear();
  await stack?.close();
  await model?.close();
  stack = undefined;
  model = undefined;
});

afterAll(async () => {
  await admin.close();
});

const INPUT = JSON.stringify({ task: 'Say hi.', rubric: ['says hi'] });
const newId = (name: string) => {
  const id = `test-${name}-${randomBytes(3).toString('hex')}`;
  created.add(id);
  return id;
};

async function cli(
  taskQueue: string,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCli(args, {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: testAddress(),
    LOOPWRIGHT_TASK_QUEUE: taskQueue,
  });
}

const oneErrorLine = (stderr: string, message: RegExp) => {
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).toMatch(/^error: /);
  expect(stderr).toMatch(message);
};

describe('loopwright schedule on a real dev server', () => {
  test('a schedule created with --every 1h and triggered starts a run that completes and shows among its recent runs', async () => {
    model = await startModelServer({ script: script(workerSays(1, 'hi'), judgeSays(1, true)), port: 0 });
    const s = (stack = await testStack('schedule-trigger', model.url));
    const id = newId('every');
    const create = await cli(
      s.taskQueue,
      'schedule',
      'create',
      'evaluate-optimize',
      '--every',
      '1h',
      '--input',
      INPUT,
      '--id',
      id,
      '--json',
    );
    expect(create.code).toBe(0);
    const details = JSON.parse(create.stdout);
    expect(details).toMatchObject({
      scheduleId: id,
      loop: 'evaluate-optimize',
      spec: { every: '1h' },
      overlap: 'skip',
      paused: false,
      catchupWindowMs: 60_000,
      taskQueue: s.taskQueue,
      workflowIdPrefix: 'evaluate-optimize/scheduled',
      recentRuns: [],
    });
    const next = new Date(details.nextRuns[0]).getTime();
    expect(next).toBeGreaterThan(Date.now());
    expect(next).toBeLessThanOrEqual(Date.now() + 3_600_000);

    const workflowId = await s.run(async () => {
      const trigger = await cli(s.taskQueue, 'schedule', 'trigger', id);
      expect(trigger.code).toBe(0);
      const [first, second] = trigger.stdout.trimEnd().split('\n');
      expect(first).toBe(id);
      const started = /^ {2}started (evaluate-optimize\/scheduled-\S+)$/.exec(second ?? '')?.[1];
      expect(started).toBeDefined();
      expect((await s.client.wait(started!)).state).toBe('completed');
      return started!;
    });
    expect(model.requests.map((r) => [r.role, r.workflowId])).toEqual([
      ['worker', workflowId],
      ['checker', workflowId],
    ]);
    const run = await admin.temporal.workflow.getHandle(workflowId).describe();
    expect(run.typedSearchAttributes.get(LoopName)).toBe('evaluate-optimize');
    expect(run.typedSearchAttributes.get(LoopState)).toBe('completed');

    const describe = JSON.parse((await cli(s.taskQueue, 'schedule', 'describe', id, '--json')).stdout);
    expect(describe.recentRuns).toEqual([expect.objectContaining({ workflowId, state: 'completed' })]);
    expect(describe.actionsTaken).toBe(1);
    const human = await cli(s.taskQueue, 'schedule', 'describe', id);
    expect(human.stdout.split('\n')[0]).toBe(id);
    expect(human.stdout).toMatch(/spec\s+every 1h \(overlap skip, catchup 60s\)/);
    expect(human.stdout).toMatch(
      new RegExp(`recent\\n\\s+\\S+ \\S+\\s+${workflowId.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\s+completed`),
    );

    expect((await cli(s.taskQueue, 'schedule', 'delete', id)).code).toBe(0);
  });

  test('pause with a note, unpause, list and delete work; the deleted schedule is unknown afterwards (exit 2)', async () => {
    const queue = uniqueQueue('schedule-admin');
    const id = newId('admin');
    expect(
      (
        await cli(
          queue,
          'schedule',
          'create',
          'evaluate-optimize',
          '--cron',
          '0 9 * * MON-FRI',
          '--input',
          INPUT,
          '--id',
          id,
          '--overlap',
          'buffer-one',
        )
      ).code,
    ).toBe(0);

    const pause = await cli(queue, 'schedule', 'pause', id, '--note', 'maintenance window', '--json');
    expect(pause.code).toBe(0);
    expect(JSON.parse(pause.stdout)).toEqual({ scheduleId: id, paused: true });
    expect(JSON.parse((await cli(queue, 'schedule', 'describe', id, '--json')).stdout)).toMatchObject({
      paused: true,
      note: 'maintenance window',
      spec: { cron: '0 9 * * MON-FRI' },
      overlap: 'buffer-one',
    });
    expect((await cli(queue, 'schedule', 'describe', id)).stdout).toMatch(/state\s+paused \(maintenance window\)/);

    expect((await cli(queue, 'schedule', 'unpause', id)).code).toBe(0);
    expect(JSON.parse((await cli(queue, 'schedule', 'describe', id, '--json')).stdout)).toMatchObject({
      paused: false,
    });

    // Listing goes through visibility, which is eventually consistent.
    let listed: Array<{ scheduleId: string }> = [];
    for (let i = 0; i < 50 && !listed.some((r) => r.scheduleId === id); i++) {
      listed = JSON.parse((await cli(queue, 'schedule', 'list', '--json')).stdout);
      if (!listed.some((r) => r.scheduleId === id)) await new Promise((r) => setTimeout(r, 200));
    }
    expect(listed.find((r) => r.scheduleId === id)).toMatchObject({
      loop: 'evaluate-optimize',
      spec: { cron: '0 9 * * MON-FRI' },
    });

    const del = await cli(queue, 'schedule', 'delete', id);
    expect(del.code).toBe(0);
    expect(del.stdout).toBe(`${id}\n  deleted\n`);
    const gone = await cli(queue, 'schedule', 'describe', id);
    expect(gone.code).toBe(2);
    oneErrorLine(gone.stderr, new RegExp(`no schedule with id ${id}: check the id with \`loopwright schedule list\``));
  });

  test('without --id the schedule is named <loop>-every-<duration> or <loop>-cron', async () => {
    const queue = uniqueQueue('schedule-names');
    created.add('evaluate-optimize-every-90m').add('evaluate-optimize-cron');
    const every = await cli(queue, 'schedule', 'create', 'evaluate-optimize', '--every', '90m', '--input', INPUT);
    expect(every.code).toBe(0);
    expect(every.stdout.split('\n')[0]).toBe('evaluate-optimize-every-90m');
    const cron = await cli(
      queue,
      'schedule',
      'create',
      'evaluate-optimize',
      '--cron',
      '*/15 * * * *',
      '--input',
      INPUT,
      '--json',
    );
    expect(cron.code).toBe(0);
    expect(JSON.parse(cron.stdout)).toMatchObject({
      scheduleId: 'evaluate-optimize-cron',
      spec: { cron: '*/15 * * * *' },
    });
    const again = await cli(queue, 'schedule', 'create', 'evaluate-optimize', '--cron', '0 0 * * *', '--input', INPUT);
    expect(again.code).toBe(2);
    oneErrorLine(
      again.stderr,
      /a schedule with id evaluate-optimize-cron already exists: choose another --id or delete it/,
    );
  });

  test.each([
    [
      'both --every and --cron',
      ['create', 'evaluate-optimize', '--every', '1h', '--cron', '0 * * * *', '--input', INPUT],
      /give exactly one of --every DURATION/,
    ],
    [
      'neither --every nor --cron',
      ['create', 'evaluate-optimize', '--input', INPUT],
      /give exactly one of --every DURATION/,
    ],
    [
      'a duration without a unit',
      ['create', 'evaluate-optimize', '--every', '60', '--input', INPUT],
      /--every must be a duration such as 30m, 12h or 7d, not "60"/,
    ],
    [
      'a duration under a second',
      ['create', 'evaluate-optimize', '--every', '500ms', '--input', INPUT],
      /--every "500ms" is not a duration of at least 1s/,
    ],
    [
      'a cron expression that is not one',
      ['create', 'evaluate-optimize', '--cron', 'every tuesday', '--input', INPUT, '--id', 'test-bad-cron'],
      /--cron "every tuesday" is not a valid cron expression/,
    ],
    [
      'input that fails the loop schema',
      ['create', 'evaluate-optimize', '--every', '1h', '--input', '{"task":"x"}', '--id', 'test-bad-input'],
      /invalid input for loop evaluate-optimize: rubric: /,
    ],
    ['an unknown loop', ['create', 'no-such-loop', '--every', '1h', '--input', INPUT], /unknown loop "no-such-loop"/],
    ['an unknown schedule id (pause)', ['pause', 'test-no-such-schedule'], /no schedule with id test-no-such-schedule/],
    [
      'an unknown schedule id (trigger)',
      ['trigger', 'test-no-such-schedule'],
      /no schedule with id test-no-such-schedule/,
    ],
    [
      'an unknown schedule id (delete)',
      ['delete', 'test-no-such-schedule'],
      /no schedule with id test-no-such-schedule/,
    ],
  ])('%s is refused with one error line and exit 2', async (_name, args, message) => {
    created.add('test-bad-cron').add('test-bad-input');
    const result = await cli(uniqueQueue('schedule-bad'), 'schedule', ...args);
    expect(result.code).toBe(2);
    oneErrorLine(result.stderr, message);
  });

  test('an unknown --overlap policy is refused by the argument parser with exit 2', async () => {
    const result = await cli(
      uniqueQueue('schedule-bad'),
      'schedule',
      'create',
      'evaluate-optimize',
      '--every',
      '1h',
      '--input',
      INPUT,
      '--overlap',
      'sometimes',
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/option '--overlap <policy>' argument 'sometimes' is invalid/);
  });
});
