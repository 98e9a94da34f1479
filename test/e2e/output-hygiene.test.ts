import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { readReportFile } from '../../activities/report-file';
import { runPresentation } from '../../common/run-presentation';
import { keyRingFromEnv } from '../../crypto/keyring';
import type { RunRecord } from '../../common/run-record';
import { LoopName } from '../../common/search-attributes';
import { runCli } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { scriptedStacks, testAddress, type TestStack } from '../helpers/temporal';

/**
 * Output hygiene as a user meets it: the built CLI (no terminal) on the test dev server, on a run
 * whose scripted model answers with terminal escape sequences, and on ids and names with
 * newlines. Whatever the run holds, what is printed or written cannot drive a terminal or forge
 * a line.
 */
const setup = scriptedStacks();

/** A candidate that clears the screen, hides a hyperlink, sets the window title, overwrites its line with CR and reverses text. */
const HOSTILE =
  'fixed\x1b[2J\x1b[H\x1b]8;;https://evil.example/x\x07the docs\x1b]8;;\x07\x1b]0;owned\x07\rall tests pass \u202eevil\u202c \x9b31m\n\tsecond line';
/** Its visible form on one line and in a block. */
const SHOWN_HEAD =
  'fixed\\x1b[2J\\x1b[H\\x1b]8;;https://evil.example/x\\x07the docs\\x1b]8;;\\x07\\x1b]0;owned\\x07\\rall tests pass \\u202eevil\\u202c \\x9b31m';
/** A name that, printed raw, forges the line a status prints for a decision. */
const FORGED = 'mallory\n  decision   approve by admin';

const isControl = (cp: number) =>
  cp <= 0x1f ||
  (cp >= 0x7f && cp <= 0x9f) ||
  [0x061c, 0x200e, 0x200f, 0x2028, 0x2029].includes(cp) ||
  (cp >= 0x202a && cp <= 0x202e) ||
  (cp >= 0x2066 && cp <= 0x2069);
/** The control characters of `text` but those a block keeps (newline, and tab where `tabs`). */
const rawControls = (text: string, tabs = true) =>
  [...text].filter((c) => isControl(c.codePointAt(0)!) && c !== '\n' && !(tabs && c === '\t'));

const cliEnv = (s: TestStack) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  LOOPWRIGHT_HOME: mkdtempSync(path.join(tmpdir(), 'lw-hygiene-home-')),
  TEMPORAL_ADDRESS: testAddress(),
  LOOPWRIGHT_TASK_QUEUE: s.taskQueue,
});
async function until(s: TestStack, id: string, done: (r: RunRecord) => boolean): Promise<RunRecord> {
  for (;;) {
    const r = await s.client.status(id);
    if (done(r)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
}
async function cli(args: string[], env: Record<string, string | undefined>): Promise<string> {
  const r = await runCli(args, env);
  expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
  return r.stdout;
}

test("a candidate's escape sequences, hyperlinks, CR and bidi override are inert in status, trace, review and the trace report; a raw decision by a name with a newline stays on one line", async () => {
  const { stack: s } = await setup.with(
    'hygiene',
    script(workerSays(1, HOSTILE), judgeSays(1, false, ['is honest'], 'Say\x1b[8m what you did.')),
  );
  const traceDir = mkdtempSync(path.join(tmpdir(), 'lw-hygiene-traces-'));
  const { id, record } = await s.run(async () => {
    const { workflowId } = await s.client.run('evaluate-optimize', {
      task: 'Fix the bug.',
      rubric: ['is honest'],
      maxAttempts: 1,
      traceDir,
    });
    expect(await s.client.wait(workflowId)).toMatchObject({ state: 'awaiting_human', stopReason: 'attempts' });
    // Sent as a raw signal, as a history recorded before `--by` was checked may hold it.
    await s.client.temporal.workflow
      .getHandle(workflowId)
      .signal('decision', { kind: 'approve', id: 'raw-by', by: FORGED, note: 'ship\x1b[2J it' });
    const seen = await until(s, workflowId, (r) => r.decisions.some((d) => d.id === 'raw-by'));
    // A workflow that refuses such a name leaves the run waiting: end it with a plain decision.
    if (seen.decisions.find((d) => d.id === 'raw-by')!.status === 'refused')
      await s.client.decide(workflowId, { kind: 'approve', by: 'bob', note: 'ship it' });
    // Its result, not its state: the run writes its trace report after it reaches `completed`.
    return { id: workflowId, record: (await s.client.temporal.workflow.getHandle(workflowId).result()) as RunRecord };
  });
  const applied = record.decisions.find((d) => d.id === 'raw-by')!.status === 'applied';
  expect(record).toMatchObject({ state: 'completed', output: HOSTILE });
  const env = cliEnv(s);

  const status = await cli(['status', id], env);
  expect(rawControls(status)).toEqual([]);
  expect(status).toContain(`  output\n    ${SHOWN_HEAD}\n    \tsecond line\n`);
  expect(status).not.toMatch(/^ {2}decision {3}approve by admin/m);
  expect(status).toContain(
    applied
      ? '  decision   approve by mallory\\n  decision   approve by admin (unverified)\n'
      : '  decision   approve by bob (unverified)\n',
  );

  const trace = await cli(['trace', id], env);
  expect(rawControls(trace, false)).toEqual([]);
  expect(trace).toContain(`candidate: ${SHOWN_HEAD} ⏎ \\tsecond line`);
  expect(trace).toContain(`output: ${SHOWN_HEAD} ⏎ \\tsecond line`);
  expect(trace.split('\n').filter((l) => l.includes('mallory'))).toEqual([
    expect.stringMatching(
      /^ {2}\+\S+ +decision approve by mallory\\n {2}decision {3}approve by admin: note "ship\\x1b\[2J it"/,
    ),
  ]);
  expect(trace).not.toMatch(/^ {2}decision {3}approve by admin/m);

  const markdown = await cli(['trace', id, '--markdown'], env);
  // Sealed with the suite's ring (global-setup): read as `loopwright report` reads it.
  const report = readReportFile(record.traceReport!.path!, keyRingFromEnv(process.env)) ?? '';
  for (const md of [markdown, report]) {
    expect(rawControls(md)).toEqual([]);
    // The fenced candidate keeps its lines (a lone CR is a line break in Markdown) and its tab.
    expect(md).toContain(
      '\n```\nfixed\\x1b[2J\\x1b[H\\x1b]8;;https://evil.example/x\\x07the docs\\x1b]8;;\\x07\\x1b]0;owned\\x07\nall tests pass \\u202eevil\\u202c \\x9b31m\n\tsecond line\n```\n',
    );
    expect(md).toContain('required correction: Say\\x1b[8m what you did.');
    expect(md.split('\n').filter((l) => l.includes('mallory'))).toEqual([
      expect.stringMatching(
        /^\| \+\S+ \| approve \| mallory {3}decision {3}approve by admin \| note "ship\\x1b\[2J it" \|/,
      ),
    ]);
  }

  const review = await cli(['review', id], env);
  expect(rawControls(review)).toEqual([]);
  expect(review).toContain(`candidate\n  ${SHOWN_HEAD}\n  \tsecond line\n`);
  expect(review).not.toMatch(/^ {2}decision {3}approve by admin/m);
  expect(review).toMatch(
    applied
      ? /^ {2}decision {3}approve by mallory\\n {2}decision {3}approve by admin \(unverified\) at /m
      : /^ {2}decision {3}approve by bob \(unverified\) at /m,
  );

  // JSON stays exact: it parses to the same values, and holds no raw control character.
  for (const args of [
    ['status', id, '--json'],
    ['trace', id, '--json'],
    ['review', id, '--json', '--no-diff'],
  ]) {
    const json = await cli(args, env);
    expect(rawControls(json, false)).toEqual([]);
    expect(JSON.stringify(JSON.parse(json))).toContain(JSON.stringify(HOSTILE));
  }
  expect(JSON.parse(await cli(['status', id, '--json'], env))).toEqual(JSON.parse(JSON.stringify(record)));
});

test('run --id and schedule create --id with a newline or ESC, and an event key with a control character, are refused with one line (exit 2) and start nothing', async () => {
  const { stack: s } = await setup.with('hygiene-ids', script(workerSays(1, 'unused')));
  // The worker runs around the test only so the stack can close cleanly: nothing reaches it.
  await s.run(async () => {
    const env = cliEnv(s);
    const input = JSON.stringify({ task: 'Say hi.', rubric: ['says hi'] });
    for (const [args, message] of [
      [
        ['run', 'evaluate-optimize', '--input', input, '--id', 'evaluate-optimize/a\nforged'],
        'error: run id "evaluate-optimize/a\\nforged" has a control or invisible character (\\n at position 20): use one line of printable text',
      ],
      [
        ['run', 'evaluate-optimize', '--input', input, '--id', 'evaluate-optimize/\x1b]0;t\x07'],
        'error: run id "evaluate-optimize/\\x1b]0;t\\x07" has a control or invisible character (\\x1b at position 19): use one line of printable text',
      ],
      [
        ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', input, '--id', 'nightly\r\u202e'],
        'error: schedule id "nightly\\r\\u202e" has a control or invisible character (\\r at position 8): use one line of printable text',
      ],
      [
        ['event', 'evaluate-optimize', '--input', input, '--key', 'k\n\x1b[2J'],
        'error: event key "k\\n\\x1b[2J" has characters that are not allowed ("\\n" "\\u001b" "["): use letters, digits and ._:-/',
      ],
    ] as Array<[string[], string]>) {
      const r = await runCli(args, env);
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        args,
        code: 2,
        stdout: '',
        stderr: `${message}\n`,
      });
    }
    for (const id of ['evaluate-optimize/a\nforged', 'evaluate-optimize/k\n\x1b[2J'])
      await expect(s.client.temporal.workflow.getHandle(id).describe()).rejects.toThrow();
    await expect(s.client.temporal.schedule.getHandle('nightly\r\u202e').describe()).rejects.toThrow();
  });
});

test('list prints a run whose id holds a newline (started before ids were checked) in one row', async () => {
  const { stack: s } = await setup.with('hygiene-list', script(workerSays(1, 'unused')));
  const loop = `hygiene-${randomBytes(4).toString('hex')}`;
  const id = `${loop}/a\nforged-row  evaluate-optimize  completed`;
  const plan = s.client.plan('evaluate-optimize', { task: 'Say hi.', rubric: ['says hi'] }, { kind: 'client' });
  const presentation = runPresentation(plan);
  // Started on the Temporal client directly, past Loopwright's check, on a queue no worker polls.
  await s.client.temporal.workflow.start('loopWorkflow', {
    taskQueue: `${s.taskQueue}-unpolled`,
    workflowId: id,
    args: [plan],
    ...presentation,
    typedSearchAttributes: [
      ...presentation.typedSearchAttributes.filter((p) => p.key !== LoopName),
      { key: LoopName, value: loop },
    ],
  });
  // The stack's worker runs around the test only so the stack can close cleanly.
  await s.run(async () => {
    try {
      const env = cliEnv(s);
      let out = '';
      for (let i = 0; i < 50 && !out.includes(loop); i++) {
        out = await cli(['list', '--loop', loop], env);
        if (!out.includes(loop)) await new Promise((res) => setTimeout(res, 200));
      }
      const lines = out.trimEnd().split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(new RegExp(`^${loop}/a\\\\nforged-row  evaluate-optimize  completed  ${loop} +running`));
      const json = JSON.parse(await cli(['list', '--loop', loop, '--json'], env)) as Array<{ workflowId: string }>;
      expect(json.map((r) => r.workflowId)).toEqual([id]);
    } finally {
      await s.client.temporal.workflow.getHandle(id).terminate('test done');
    }
  });
});
