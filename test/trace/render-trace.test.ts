import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { buildTrace } from '../../trace/build-trace';
import { formatOffset, renderTrace } from '../../trace/render-trace';
import type { Trace } from '../../trace/types';
import { must } from '../../common/must';

function traceOf(name: 'feedback' | 'escalate' | 'approve' | 'agent' | 'pass' | 'budget' | 'effect' | 'signed'): Trace {
  return buildTrace([
    historyFromJSON(
      JSON.parse(readFileSync(path.join(__dirname, '..', 'replay', 'histories', `replay-${name}.json`), 'utf8')),
    ),
  ]);
}

/** The lines without their time offsets, which depend on the recording. */
const untimed = (lines: string[]) => lines.map((l) => (l.startsWith('  +') ? `  ${l.slice(10)}` : l));

describe('renderTrace', () => {
  test('budget run: the wait with no decision by the deadline, and how it stopped', () => {
    expect(untimed(renderTrace(traceOf('budget')).slice(3))).toEqual([
      '  attempt 1',
      '    claude-sonnet-5-5: worker (attempt 1)  103 tokens $0.0004',
      '    candidate: no crash here',
      '    check judge (judge): FAIL mentions a crash — misses: mentions a crash  418 tokens $0.0006',
      '  awaiting_human (budget): attempt budget exhausted: 1/1 attempts used',
      '  no decision by the deadline',
      '  budget_exhausted (attempts)  521 tokens $0.0009',
    ]);
  });

  test('signed run: the approval came as the decide update, and shows the verified principal and its key', () => {
    const trace = traceOf('signed');
    expect(trace.decisions).toEqual([
      expect.objectContaining({
        kind: 'approve',
        by: 'ada',
        status: 'applied',
        verified: true,
        fingerprint: expect.stringMatching(/^SHA256:[A-Za-z0-9+/]{43}$/),
      }),
    ]);
    const lines = untimed(renderTrace(trace));
    expect(lines).toContainEqual(
      expect.stringMatching(/^ {2}decision approve by ada \(verified, key SHA256:[A-Za-z0-9+/]{43}\): note "ship it"$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^ {2}effect commit replay-signed\/commit\/1 → [0-9a-f]{12} on main$/),
    );
  });

  test('effect run: the approval, who gave it, and the commit with its key, in that order', () => {
    const lines = untimed(renderTrace(traceOf('effect')));
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const order = [
      at(/^ {4}check change policy \(diff\): FAIL no deleted tests, regression test/),
      at(/^ {2}awaiting_human \(approval\): attempt 2 passed every check: approve to apply commit \(git_commit\)$/),
      at(/^ {2}decision approve by ada \(unverified\): note "ship it"$/),
      at(/^ {2}effect commit replay-effect\/commit\/1 → [0-9a-f]{12} on main$/),
      at(/^ {2}completed \(passed\)/),
    ];
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });

  test('feedback run: a header, then attempts with model calls, verdicts, feedback and the ending, one line each', () => {
    const lines = renderTrace(traceOf('feedback'));
    expect(lines[0]).toBe('replay-feedback  evaluate-optimize v2 L1  started 2026-11-29 09:14:16 UTC by client');
    expect(lines[1]).toBe('  task: Write a haiku about crashes.');
    expect(lines.slice(3).every((l) => /^ {2}\+\d+\.\ds /.test(l))).toBe(true);
    expect(untimed(lines.slice(3))).toEqual(
      [
        '  attempt 1',
        '  claude-sonnet-5-5: worker (attempt 1)  101 tokens $0.0003',
        '  candidate: first',
        '  check judge (judge): FAIL mentions a crash — misses: mentions a crash  416 tokens $0.0006',
        '  feedback to attempt 2: misses: mentions a crash',
        '  attempt 2',
        '  claude-sonnet-5-5: worker (attempt 2)  182 tokens $0.0006',
        '  candidate: a crash, fixed',
        '  check judge (judge): pass  402 tokens $0.0005',
        '  completed (passed)  1101 tokens $0.0020',
        '    output: a crash, fixed',
      ].map((l, i) => (i === 0 || i === 5 || i >= 9 ? l : `  ${l}`)),
    );
  });

  test('escalate and approve runs: the wait, the decision with who made it, and the override at the end', () => {
    const escalate = untimed(renderTrace(traceOf('escalate')));
    expect(escalate).toContain('  awaiting_human (budget): attempt budget exhausted: 1/1 attempts used');
    expect(escalate).toContain('  decision retry by ada (unverified): guidance "Name the crash.", +1 attempt');
    const approve = untimed(renderTrace(traceOf('approve')));
    expect(approve).toContain('  decision approve by ada (unverified): note "override"  (human override)');
    expect(approve).toContain('  completed (approved) — human override  517 tokens $0.0009');
  });

  test('agent run: tool calls with their outcome, and the denied call with the reason', () => {
    const lines = untimed(renderTrace(traceOf('agent')));
    expect(lines).toContain('    claude-sonnet-5-5: turn 1 (attempt 1)  397 tokens $0.0013  → read_file, list_files');
    expect(lines).toContain('    tool read_file notes.txt  ok: the crash happened at 3am');
    expect(lines).toContain(
      '    tool write_file x.txt  DENIED write_file is a write tool and this run is L1 (report only): only read tools are allowed',
    );
  });

  test('cuts a long candidate to 300 characters, shows newlines as ⏎ and redacts secrets', () => {
    const trace = traceOf('feedback');
    must(trace.attempts[0], 'the run has an attempt').candidate =
      `line one\nsk-ant-api03-0123456789abcdef ${'x'.repeat(1000)}`;
    const line = renderTrace(trace).find((l) => l.includes('candidate: line one'))!;
    expect(line).toContain('candidate: line one ⏎ [redacted] xxx');
    expect(line.endsWith('…')).toBe(true);
    expect(line.slice(line.indexOf('candidate: ') + 'candidate: '.length).length).toBeLessThan(310);
  });

  test('shows an effect with its key and commit, and a refused decision with its reason', () => {
    const trace = traceOf('approve');
    trace.effects.push({
      at: trace.outcome!.at,
      offsetMs: trace.outcome!.offsetMs,
      key: 'replay-approve/commit/1',
      name: 'commit',
      kind: 'git_commit',
      target: 'main',
      commit: '1e550688945e0123',
      path: null,
      alreadyApplied: false,
      error: null,
    });
    trace.decisions.push({
      ...must(trace.decisions[0], 'the run has a decision'),
      by: 'eve',
      status: 'refused',
      refusal: 'the run is not waiting for a decision',
      override: false,
      note: null,
    });
    const lines = untimed(renderTrace(trace));
    expect(lines).toContain('  effect commit replay-approve/commit/1 → 1e550688945e on main');
    expect(lines).toContain('  decision approve by eve  REFUSED: the run is not waiting for a decision');
  });

  test.each([
    [400, '+0.4s'],
    [59_940, '+59.9s'],
    [59_960, '+1m00s'],
    [123_000, '+2m03s'],
    [3_720_000, '+1h02m'],
    [2 * 86_400_000 + 3 * 3_600_000, '+2d03h'],
  ])('formats an offset of %i ms as %s', (ms, text) => {
    expect(formatOffset(ms)).toBe(text);
  });
});
