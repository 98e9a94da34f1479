import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Activities } from '../../../activities';
import type { ModelRule } from '../../../model-server/script';
import { turnAnswers, turnCalls } from '../../helpers/agent-scripts';
import { judgeSays } from '../../helpers/scripts';
import { notesRepo } from '../../helpers/notes-repo';
import { scriptedStacks } from '../../helpers/temporal';
import { must } from '../../../common/must';

/**
 * Containment: no tool call of one run can stall the worker for the others. Activities run on
 * the worker's main thread, next to the workflow activations and query answers of every run,
 * so a tool that blocks that thread (a backtracking regex, a blocking read of a FIFO) freezes
 * all of them. Here a hostile run and an ordinary run share one worker.
 */
const setup = scriptedStacks();

const repo = () => notesRepo('lw-stall-');

/** Lines of `a` and `b` from a fixed seed. */
function abLines(count: number, length: number, seed: number): string {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  return Array.from(
    { length: count },
    () => Array.from({ length }, () => (next() < 0.5 ? 'a' : 'b')).join('') + '!',
  ).join('\n');
}

const CATASTROPHIC = '(a+)+$';
// Keeps a few hundred RE2 threads alive on every line: a long search (about 0.1 s a line here),
// legitimately slow but bounded, and never on the worker's main thread.
const EXPENSIVE = 'a[ab]{450}$';

describe('no tool call stalls the worker', () => {
  let valve: ChildProcess | undefined;
  afterEach(() => {
    if (valve && valve.exitCode === null && valve.signalCode === null) valve.kill('SIGKILL');
    valve = undefined;
  });

  test('a hostile run gets prompt answers for a catastrophic regex and a FIFO, while another run completes and a query answers during its long search', async () => {
    const hostile = repo();
    const other = repo();
    // 2 MB: lines on which (a+)+$ backtracks (2^20 steps each for JavaScript's RegExp; short enough
    // that the old code froze the worker for about a second instead of for good, so this test
    // fails on it instead of hanging), between ordinary lines.
    const block = [
      `${'a'.repeat(20)}!`,
      ...Array.from({ length: 99 }, (_, i) => `ordinary line ${i} of the log, nothing to see`),
    ].join('\n');
    writeFileSync(path.join(hostile, 'huge.txt'), Array.from({ length: 430 }, () => block).join('\n'));
    const pipe = path.join(hostile, 'pipe');
    execFileSync('mkfifo', [pipe]);
    // Opens the FIFO's write end once: it releases a reader that waits (the old code's search),
    // and stays blocked, then killed, when no reader ever waits (a tool that refuses the FIFO at once).
    valve = spawn(
      process.execPath,
      ['-e', "const fs = require('fs'); fs.closeSync(fs.openSync(process.argv[1], 'w'));", pipe],
      { stdio: 'ignore' },
    );
    const slow = path.join(hostile, 'slow');
    mkdirSync(slow);
    for (let i = 0; i < 600; i += 1)
      writeFileSync(path.join(slow, `part-${String(i).padStart(3, '0')}.txt`), abLines(2, 4095, i + 1));

    const suffix = Math.random().toString(36).slice(2, 8);
    const hostileId = `stall-hostile-${suffix}`;
    const otherId = `stall-other-${suffix}`;
    const hostileTurn: ModelRule = {
      name: 'hostile turn 1',
      match: { role: 'worker', attempt: 1, turn: 1, workflowId: hostileId },
      reply: {
        content: [
          { type: 'tool_use', id: 'toolu_regex', name: 'search', input: { pattern: CATASTROPHIC, path: 'huge.txt' } },
          { type: 'tool_use', id: 'toolu_fifo', name: 'read_file', input: { path: 'pipe' } },
          { type: 'tool_use', id: 'toolu_fifo_search', name: 'search', input: { pattern: 'x', path: 'pipe' } },
          { type: 'tool_use', id: 'toolu_slow', name: 'search', input: { pattern: EXPENSIVE, path: 'slow' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 200, output_tokens: 30 },
      },
    } as ModelRule;

    // Every tool activity's start and end, and the test's own observations, in one sequence.
    const events: string[] = [];
    let slowStarted!: () => void;
    const slowStart = new Promise<void>((resolve) => (slowStarted = resolve));
    const wrap = (activities: Activities): Activities => ({
      ...activities,
      async runTool(input) {
        events.push(`start ${input.toolUseId}`);
        if (input.toolUseId === 'toolu_slow') slowStarted();
        try {
          return await activities.runTool(input);
        } finally {
          events.push(`end ${input.toolUseId}`);
        }
      },
    });

    const { model, stack } = await setup.with(
      'tool-stall',
      [
        hostileTurn,
        turnAnswers(2, 'Nothing matched, and pipe is not a file.', {
          match: { role: 'worker', attempt: 1, turn: 2, workflowId: hostileId },
        }),
        turnCalls(1, [['read_file', { path: 'notes.txt' }]], {
          match: { role: 'worker', attempt: 1, turn: 1, workflowId: otherId },
        }),
        turnAnswers(2, 'The crash happened at 3am (notes.txt:1).', {
          match: { role: 'worker', attempt: 1, turn: 2, workflowId: otherId },
        }),
        judgeSays(1, true, [], '', {
          name: 'judge hostile',
          match: { role: 'checker', attempt: 1, workflowId: hostileId },
        }),
        judgeSays(1, true, [], '', {
          name: 'judge other',
          match: { role: 'checker', attempt: 1, workflowId: otherId },
        }),
      ],
      { wrap },
    );
    const input = (workspace: string, task: string) => ({
      task,
      rubric: ['cites a file'],
      tools: ['read_file', 'search'],
      workspace,
      autonomy: 'L1',
    });

    const { hostileRecord, otherRecord, live } = await stack.run(async () => {
      await stack.client.run('evaluate-optimize', input(hostile, 'Search the log.'), { id: hostileId });
      await slowStart;
      // The hostile run's long search is running: a whole other run must get through meanwhile...
      await stack.client.run('evaluate-optimize', input(other, 'When was the crash?'), { id: otherId });
      const otherRecord = await stack.client.wait(otherId);
      events.push('other run completed');
      // ...and the hostile run itself must answer its state query.
      const live = await stack.client.status(hostileId);
      events.push('query answered');
      // Let the long search finish: the files it has not read yet are gone.
      rmSync(slow, { recursive: true, force: true });
      const hostileRecord = await stack.client.wait(hostileId);
      return { hostileRecord, otherRecord, live };
    });

    // The assertion the old code fails: its tools held the thread, so nothing else ran between
    // the long search activity's start and end (and the hostile run had finished by the query).
    const at = (event: string) => events.indexOf(event);
    expect(at('start toolu_slow')).toBeGreaterThanOrEqual(0);
    expect(at('other run completed')).toBeGreaterThan(at('start toolu_slow'));
    expect(at('end toolu_slow')).toBeGreaterThan(at('other run completed'));
    expect(at('end toolu_slow')).toBeGreaterThan(at('query answered'));
    expect(otherRecord).toMatchObject({ state: 'completed', output: 'The crash happened at 3am (notes.txt:1).' });
    expect(live).toMatchObject({ workflowId: hostileId, state: 'running' });
    // The hostile calls were answered before a whole other run could finish.
    for (const id of ['toolu_regex', 'toolu_fifo', 'toolu_fifo_search'])
      expect(at(`end ${id}`)).toBeLessThan(at('other run completed'));

    expect(hostileRecord).toMatchObject({ state: 'completed', output: 'Nothing matched, and pipe is not a file.' });
    const calls = must(hostileRecord.attempts[0], 'the run has an attempt').toolCalls!;
    expect(calls.map((c) => [c.name, c.allowed, c.isError])).toEqual([
      ['search', true, false],
      ['read_file', true, true],
      ['search', true, true],
      ['search', true, false],
    ]);
    const seen = model.requests.find(
      (r) => r.role === 'worker' && r.turn === 2 && r.workflowId === hostileId,
    )!.lastUser;
    expect(seen).toContain(`no matches for /${CATASTROPHIC}/ under huge.txt`);
    expect(seen.split('path pipe is a named pipe (FIFO), not a regular file')).toHaveLength(3);
  });
});
