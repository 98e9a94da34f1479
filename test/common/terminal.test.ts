import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { writeReport } from '../../activities/reports';
import { runTable, summarize } from '../../client/output';
import { checkRunId } from '../../client/run-id';
import { buildTrace } from '../../trace/build-trace';
import { renderTraceMarkdown } from '../../trace/render-markdown';
import { renderTrace } from '../../trace/render-trace';
import type { Trace } from '../../trace/types';
import { UsageError } from '../../common/errors';
import type { RunRecord } from '../../common/run-record';
import { escapeBlock, escapeLine, requireOneLine, terminalJson } from '../../common/terminal';
import { ZERO_USAGE } from '../../common/usage';
import { must } from '../../common/must';

/**
 * Written out here, not taken from the module: C0, DEL, C1, the Arabic letter mark, LRM/RLM,
 * the line and paragraph separators, and the bidi embeddings, overrides and isolates.
 */
const isControl = (cp: number) =>
  cp <= 0x1f ||
  (cp >= 0x7f && cp <= 0x9f) ||
  [0x061c, 0x200e, 0x200f, 0x2028, 0x2029].includes(cp) ||
  (cp >= 0x202a && cp <= 0x202e) ||
  (cp >= 0x2066 && cp <= 0x2069);
const controlsIn = (text: string) => [...text].filter((c) => isControl(c.codePointAt(0)!));

const CONTROLS = [
  ...Array.from({ length: 0x20 }, (_, i) => i),
  ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i),
  0x061c,
  0x200e,
  0x200f,
  0x2028,
  0x2029,
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e,
  0x2066,
  0x2067,
  0x2068,
  0x2069,
].map((cp) => String.fromCodePoint(cp));
/** Text rich in what a hostile candidate sends: controls, sequences, backslashes, CRLF, any code point, lone surrogates. */
const unit = fc.oneof(
  fc.constantFrom(...CONTROLS),
  fc.constantFrom('\x1b[2J', '\x1b]8;;https://evil.example\x07', '\x1b]0;title\x07', '\r\n', '\\', '\\x1b', 'a', ' '),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((n) => String.fromCharCode(n)),
);
const hostile = fc.string({ unit, maxLength: 80 });

describe('escapeLine, escapeBlock and terminalJson', () => {
  test('no output of escapeLine holds a C0, DEL, C1, separator or bidi character, newline and tab included', () => {
    fc.assert(
      fc.property(hostile, (text) => expect(controlsIn(escapeLine(text))).toEqual([])),
      { numRuns: 2000 },
    );
  });

  test('no output of escapeBlock holds one but newline and tab, and it has as many lines as the text', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const out = escapeBlock(text);
        expect(controlsIn(out).filter((c) => c !== '\n' && c !== '\t')).toEqual([]);
        expect(out.split('\n')).toHaveLength(text.split(/\r\n|\n/).length);
      }),
      { numRuns: 2000 },
    );
  });

  test('text without a control character is printed as it is; escaping twice changes nothing more', () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(escapeLine(text) === text).toBe(controlsIn(text).length === 0);
        expect(escapeLine(escapeLine(text))).toBe(escapeLine(text));
        expect(escapeBlock(escapeBlock(text))).toBe(escapeBlock(text));
      }),
    );
  });

  test('terminalJson is exact JSON (it parses to the same value) and holds no raw control character but its own indentation', () => {
    fc.assert(
      fc.property(
        fc.dictionary(hostile, fc.oneof(hostile, fc.array(hostile, { maxLength: 3 }), fc.integer())),
        (value) => {
          const json = terminalJson(value, 2);
          expect(JSON.parse(json)).toEqual(value);
          expect(controlsIn(json).filter((c) => c !== '\n')).toEqual([]);
          expect(controlsIn(terminalJson(value))).toEqual([]);
        },
      ),
    );
  });

  test('JSON.stringify alone escapes C0 but leaves DEL, C1 and bidi raw, which terminalJson writes as \\uXXXX', () => {
    expect(JSON.stringify('\x1b\r\n\t\b')).toBe('"\\u001b\\r\\n\\t\\b"');
    expect(JSON.stringify('\x7f\x9b\u202e\u2028')).toBe('"\x7f\x9b\u202e\u2028"');
    expect(terminalJson('\x7f\x9b\u202e\u2028')).toBe('"\\u007f\\u009b\\u202e\\u2028"');
  });

  test('CSI, OSC 8 hyperlinks, title sets, CR, backspace, C1 and bidi overrides are shown as escapes', () => {
    const text =
      'ok\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x1b]0;pwned\x07 done\rall pass\b\b \x9b2J \u202eevil\u202c \u2066x\u2069';
    expect(escapeLine(text)).toBe(
      'ok\\x1b[31mred\\x1b[0m \\x1b]8;;https://evil.example\\x07click\\x1b]8;;\\x07 \\x1b]0;pwned\\x07 done\\rall pass\\x08\\x08 \\x9b2J \\u202eevil\\u202c \\u2066x\\u2069',
    );
    expect(escapeLine('a\nb\tc')).toBe('a\\nb\\tc');
    expect(escapeBlock('a\nb\tc\r\nd\re')).toBe('a\nb\tc\nd\\re');
  });
});

describe('names and ids are refused at input when they hold a control character', () => {
  test('a run id with a newline, an ESC or a bidi override is a one-line UsageError (exit 2) that shows it escaped', () => {
    for (const [id, shown] of [
      ['fix/a\nb', 'fix/a\\nb" has a control or invisible character (\\n at position 6)'],
      ['x\x1b[2J', 'x\\x1b[2J" has a control or invisible character (\\x1b at position 2)'],
      ['\u202eabc', '\\u202eabc" has a control or invisible character (\\u202e at position 1)'],
    ] as const) {
      let err: unknown;
      try {
        checkRunId(id);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).exitCode).toBe(2);
      expect((err as UsageError).message).toContain(`run id "${shown}`);
      expect(controlsIn((err as UsageError).message)).toEqual([]);
    }
    expect(checkRunId('fix-test/issue-42 ü')).toBe('fix-test/issue-42 ü');
    // Invisible characters would let two ids look the same: refused too, and shown.
    expect(() => checkRunId('fix/a\u200bb')).toThrow(
      'run id "fix/a\\u200bb" has a control or invisible character (\\u200b at position 6)',
    );
    expect(() => requireOneLine('schedule id', 'nightly\t1')).toThrow(
      'schedule id "nightly\\t1" has a control or invisible character (\\t at position 8): use one line of printable text',
    );
  });
});

const FORGED = 'mallory\n  decision   approve by admin';
const decision: NonNullable<RunRecord['decision']> = {
  id: 'd1',
  kind: 'approve',
  by: FORGED,
  status: 'applied',
  at: '2025-01-02T03:05:00.000Z',
};
const HOSTILE =
  'done\x1b]8;;https://evil.example\x07here\x1b]8;;\x07\x1b]0;pwned\x07\rall tests pass \u202eevil\n\tindented';

function record(extra: Partial<RunRecord> = {}): RunRecord {
  return {
    workflowId: 'evaluate-optimize/r1',
    loop: 'evaluate-optimize',
    specVersion: '2',
    autonomy: 'L1',
    task: 'a task',
    rubricHash: 'sha256:x',
    state: 'completed',
    ok: true,
    output: HOSTILE,
    override: true,
    attempt: 1,
    attempts: [
      { n: 1, candidate: HOSTILE, passed: false, reasons: ['judge: no\x1b[1A'], verdicts: [], usage: ZERO_USAGE },
    ],
    workspace: null,
    pendingReview: null,
    budget: {
      maxAttempts: 1,
      maxWallTimeMs: null,
      maxTokens: null,
      maxCostUsd: null,
      maxSideEffects: null,
      used: { attempts: 1, wallTimeMs: 0, tokens: 0, costUsd: 0, sideEffects: 0 },
      extensions: [{ by: FORGED, at: '2025-01-02T03:05:00.000Z', attempts: 1 }],
    },
    decision,
    decisions: [decision],
    stopReason: 'approved',
    escalation: null,
    usage: { total: ZERO_USAGE, worker: ZERO_USAGE, checker: ZERO_USAGE },
    effects: [],
    audit: null,
    error: 'boom\x1b[2J',
    startedAt: '2025-01-02T03:04:05.000Z',
    endedAt: '2025-01-02T03:05:05.000Z',
    ...extra,
  };
}

function traceOf(name: string): Trace {
  return buildTrace([
    historyFromJSON(
      JSON.parse(readFileSync(path.join(__dirname, '..', 'replay', 'histories', `replay-${name}.json`), 'utf8')),
    ),
  ]);
}

describe('what a run recorded is printed inert, and a by with a newline stays on one line', () => {
  test('status: the decision and the extension by a name with a newline stay on their lines; the output block keeps its lines and tabs only', () => {
    const lines = summarize(record());
    expect(lines.filter((l) => l.includes('by mallory'))).toEqual([
      '  extended   +1 attempts by mallory\\n  decision   approve by admin',
      '  decision   approve by mallory\\n  decision   approve by admin (unverified)',
    ]);
    expect(lines.some((l) => l.includes('\n'))).toBe(false);
    expect(lines).toContain('  error      boom\\x1b[2J');
    expect(lines).toContain('    #1 failed: judge: no\\x1b[1A');
    expect(lines.slice(lines.indexOf('  output'))).toEqual([
      '  output',
      '    done\\x1b]8;;https://evil.example\\x07here\\x1b]8;;\\x07\\x1b]0;pwned\\x07\\rall tests pass \\u202eevil',
      '    \tindented',
    ]);
    expect(lines.flatMap(controlsIn).filter((c) => c !== '\t')).toEqual([]);
  });

  test("status: an effect's note (a checkout it left alone) is printed under it, inert", () => {
    const effect = {
      key: 'k/1',
      name: 'commit',
      kind: 'git_commit' as const,
      target: 'main',
      commit: 'abcdef1234567890',
      alreadyApplied: false,
      note: 'the checkout of main has changes of its own\x1b[2J: left as it was',
      at: '2025-01-02T03:05:00.000Z',
      approvedBy: null,
    };
    const lines = summarize(record({ effects: [effect] }));
    expect(
      lines.slice(
        lines.findIndex((l) => l.startsWith('  effect')),
        lines.findIndex((l) => l.startsWith('  effect')) + 2,
      ),
    ).toEqual([
      '  effect     commit: abcdef123456 on main [k/1]',
      '             note: the checkout of main has changes of its own\\x1b[2J: left as it was',
    ]);
  });

  test('list: an id with a newline (from before ids were checked) stays in its row', () => {
    const row = {
      workflowId: 'x/1\nforged  row',
      loop: 'evaluate-optimize',
      state: null,
      attempt: null,
      costUsd: null,
      tokens: null,
      status: 'RUNNING',
      startTime: '2025-01-02T03:04:05.000Z',
      closeTime: null,
    };
    const lines = runTable([row]);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^x\/1\\nforged {2}row {2}evaluate-optimize {2}running/);
  });

  test("trace text and Markdown: a decision by a name with a newline is on one line, a candidate's sequences are escapes", () => {
    const trace = traceOf('approve');
    must(trace.decisions[0], 'the approve run has a decision').by = FORGED;
    must(trace.attempts[0], 'the run has an attempt').candidate = HOSTILE;
    const text = renderTrace(trace);
    expect(text.filter((l) => l.includes('decision approve'))).toEqual([
      expect.stringMatching(/^ {2}\+\S+ +decision approve by mallory\\n {2}decision {3}approve by admin/),
    ]);
    expect(text.join('\n')).toContain(
      'candidate: done\\x1b]8;;https://evil.example\\x07here\\x1b]8;;\\x07\\x1b]0;pwned\\x07\\rall tests pass \\u202eevil ⏎ \\tindented',
    );
    expect(text.flatMap(controlsIn)).toEqual([]);

    const md = renderTraceMarkdown(trace);
    expect(md.split('\n').filter((l) => l.includes('mallory'))).toEqual([
      expect.stringMatching(/^\| \+\S+ \| approve \| mallory {3}decision {3}approve by admin \(unverified\) \|/),
    ]);
    // In a fenced block a lone CR is a line break, as Markdown reads it: it starts a line, it cannot overwrite one.
    expect(md).toContain(
      '\n```\ndone\\x1b]8;;https://evil.example\\x07here\\x1b]8;;\\x07\\x1b]0;pwned\\x07\nall tests pass \\u202eevil\n\tindented\n```\n',
    );
    expect(controlsIn(md).filter((c) => c !== '\n' && c !== '\t')).toEqual([]);
  });

  test('a written report keeps its Markdown, and its title, run and body cannot drive a terminal or forge a line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lw-terminal-'));
    try {
      const written = writeReport({
        key: 'r/report/1',
        dir,
        item: 'item',
        title: 'triage\n# forged heading\x1b]0;t\x07',
        markdown: `## Cause\n\n${HOSTILE}\n\n- cited: src/a.js:3`,
        workflowId: 'r\u202e1',
      });
      const text = readFileSync(written.path, 'utf8');
      expect(text.split('\n').slice(0, 4)).toEqual([
        '# triage\\n# forged heading\\x1b]0;t\\x07',
        '',
        '- run: `r\\u202e1`',
        '- effect: `r/report/1`',
      ]);
      expect(text).toContain('## Cause\n\ndone\\x1b]8;;https://evil.example\\x07here');
      expect(text).toContain('\\u202eevil\n\tindented\n\n- cited: src/a.js:3\n');
      expect(controlsIn(text).filter((c) => c !== '\n' && c !== '\t')).toEqual([]);
      const index = readFileSync(path.join(dir, 'index.md'), 'utf8');
      expect(index).toContain('- [triage\\n# forged heading\\x1b]0;t\\x07](item.md) (run `r\\u202e1`)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
