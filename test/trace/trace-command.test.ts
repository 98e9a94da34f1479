import { traceCommand } from '../../client/commands/trace';
import type { Output } from '../../client/output';
import type { Trace } from '../../trace/types';
import { RunNotFoundError } from '../../common/errors';
import { scriptedStacks } from '../helpers/temporal';
import { judgeSays, script, workerSays } from '../helpers/scripts';

const SECRET = 'sk-ant-api03-SECRETSECRET0123456789';

const setup = scriptedStacks();

function capture(): Output & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}

describe('loopwright trace on a real dev server', () => {
  test('tells a finished two-attempt run from history alone, as text and as JSON, with secrets redacted', async () => {
    const { stack } = await setup.with(
      'trace',
      script(
        workerSays(1, 'first try, sent with Bearer abcdef0123456789'),
        judgeSays(1, false, ['mentions a crash'], 'Mention the crash.'),
        workerSays(2, 'a crash\nat night\nthree'),
        judgeSays(2, true),
      ),
    );
    const s = stack;
    const { workflowId } = await s.run(async () => {
      const started = await s.client.run('evaluate-optimize', {
        task: `Write a haiku about crashes. (key ${SECRET})`,
        rubric: ['mentions a crash'],
      });
      const record = await s.client.wait(started.workflowId);
      expect(record.state).toBe('completed');
      return started;
    });
    // The worker has stopped: the trace needs only the server's history.
    const text = capture();
    expect(await traceCommand(s.client, workflowId, {}, text)).toBe(0);
    expect(text.lines[0]).toMatch(new RegExp(`^${workflowId}  evaluate-optimize v\\d+ L\\d  started .* by client$`));
    const body = text.lines.join('\n');
    expect(body).toMatch(/\+\d+\.\ds +attempt 1\n/);
    expect(body).toContain('check judge (judge): FAIL mentions a crash — fails: mentions a crash');
    expect(body).toContain('feedback to attempt 2: fails: mentions a crash');
    expect(body).toContain('candidate: a crash ⏎ at night ⏎ three');
    expect(body).toMatch(/completed \(passed\) {2}360 tokens \$\d+\.\d{4}/);
    expect(body).toContain('Bearer [redacted]');
    expect(body).not.toContain(SECRET);

    const json = capture();
    expect(await traceCommand(s.client, workflowId, { json: true }, json)).toBe(0);
    const trace = JSON.parse(json.lines.join('\n')) as Trace;
    expect(trace).toMatchObject({
      version: 1,
      workflowId,
      runs: 1,
      loop: 'evaluate-optimize',
      trigger: { kind: 'client' },
    });
    expect(trace.task).toBe('Write a haiku about crashes. (key [redacted])');
    expect(trace.attempts.map((a) => [a.n, a.passed])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(trace.attempts[0]?.candidate).toBe('first try, sent with Bearer [redacted]');
    expect(trace.attempts[0]?.feedback).toMatchObject({ toAttempt: 2, corrections: ['Mention the crash.'] });
    expect(trace.attempts[0]?.modelCalls[0]).toMatchObject({ activity: 'generateCandidate', tokens: 120, error: null });
    expect(trace.outcome).toMatchObject({ status: 'completed', state: 'completed', stopReason: 'passed' });
    expect(trace.usage.inputTokens + trace.usage.outputTokens).toBe(360);
    expect(JSON.stringify(trace)).not.toContain(SECRET);

    const md = capture();
    expect(await traceCommand(s.client, workflowId, { markdown: true }, md)).toBe(0);
    const report = md.lines.join('\n');
    expect(report).toMatch(/^# evaluate-optimize: Write a haiku about crashes\./);
    expect(report).toContain(`| Run | \`${workflowId}\` |`);
    expect(report).toContain('## Attempt 2');
    expect(report).toContain('| **Outcome** | completed (passed) |');
    expect(report).not.toContain(SECRET);
    await expect(traceCommand(s.client, workflowId, { markdown: true, json: true }, capture())).rejects.toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/give one$/),
    });
  });

  test('an unknown run id is a RunNotFoundError (exit 2) and prints nothing', async () => {
    const { stack } = await setup.with('trace-missing', script(workerSays(1, 'unused')));
    const s = stack;
    const io = capture();
    // The worker runs (and shuts down) around the call only so the stack can close cleanly.
    const failed = await s.run(() =>
      traceCommand(s.client, 'no-such-run/123', {}, io).then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    expect(failed).toBeInstanceOf(RunNotFoundError);
    expect(failed).toMatchObject({
      exitCode: 2,
      message: 'no run with id no-such-run/123: check the id with `loopwright list`',
    });
    expect(io.lines).toEqual([]);
  });
});
