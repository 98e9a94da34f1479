import { readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { buildTrace } from '../../trace/build-trace';
import { renderTraceMarkdown } from '../../trace/render-markdown';
import type { Trace } from '../../trace/types';
import { must } from '../../common/must';

type Name = 'feedback' | 'escalate' | 'approve' | 'agent' | 'effect';

/** A committed history (test/replay/histories) as JSON, before `historyFromJSON`. */
const rawHistory = (name: Name): unknown =>
  JSON.parse(readFileSync(path.join(__dirname, '..', 'replay', 'histories', `replay-${name}.json`), 'utf8'));
const traceOf = (name: Name): Trace => buildTrace([historyFromJSON(rawHistory(name))]);

/** The lines a CommonMark reader sees outside fenced code blocks (top level, backtick fences). */
function outsideFences(md: string): string[] {
  const out: string[] = [];
  let fence = 0;
  for (const line of md.split('\n')) {
    const run = /^ {0,3}(`{3,})/.exec(line)?.[1]?.length ?? 0;
    if (fence === 0 && run > 0) fence = run;
    else if (fence > 0 && run >= fence && /^ {0,3}`+\s*$/.test(line)) fence = 0;
    else if (fence === 0) out.push(line);
  }
  expect(fence).toBe(0); // every block is closed
  return out;
}

/** Each table's rows (header first, no delimiter row), split on unescaped pipes. */
function tableRows(md: string): string[][][] {
  const tables: string[][][] = [];
  let current: string[][] | null = null;
  for (const line of outsideFences(md)) {
    if (!line.startsWith('|')) {
      current = null;
      continue;
    }
    if (!current) tables.push((current = []));
    if (/^\|(-+\|)+$/.test(line)) continue; // the delimiter row
    current.push(
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return tables;
}

/** The report's section titled `heading`, up to the next `## `. */
function section(md: string, heading: string): string {
  const start = md.indexOf(`\n${heading}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = md.indexOf('\n## ', start + heading.length + 2);
  return md.slice(start, end < 0 ? undefined : end);
}

describe('renderTraceMarkdown', () => {
  test('effect run: the approval by ada and the commit with its key in the Effects table', () => {
    const md = renderTraceMarkdown(traceOf('effect'));
    const effects = section(md, '## Effects');
    expect(effects).toMatch(/\| commit \| git_commit \| `replay-effect\/commit\/1` \| main \|/);
    expect(section(md, '## Escalations and decisions')).toMatch(/approve.*ada/);
  });

  test('feedback run: a summary, two attempt sections, attempt 1 fails with the judge reason and feeds attempt 2, completed (passed)', () => {
    const md = renderTraceMarkdown(traceOf('feedback'));
    expect(
      md.startsWith('# evaluate-optimize: Write a haiku about crashes.\n\n| Run | `replay-feedback` |\n|---|---|\n'),
    ).toBe(true);
    expect(md).toContain('| **Loop** | evaluate-optimize v2 |');
    expect(md).toContain('| **Outcome** | completed (passed) |');
    expect(md).toContain('| **Attempts** | 2 of 2 (budget: 2 attempts) |');
    expect(md).toContain('| **Tokens** | 1101 |');
    expect(md).toContain('| **Cost** | $0.0020 |');
    expect(md).toMatch(/\| \*\*Rubric\*\* \| `sha256:[0-9a-f]{64}` \|/);
    expect(md).toContain('\n## Task\n\n> Write a haiku about crashes.\n');
    expect(outsideFences(md).filter((l) => l.startsWith('## '))).toEqual([
      '## Task',
      '## Attempt 1',
      '## Attempt 2',
      '## Outcome',
    ]);
    const first = section(md, '## Attempt 1');
    expect(first).toContain('| worker | claude-sonnet-5-5 | 101 | $0.0003 | ok |');
    expect(first).toContain(
      '- ❌ **judge** (judge): misses: mentions a crash · 416 tokens, $0.0006\n  - failed: mentions a crash\n  - required correction: Fix: mentions a crash.',
    );
    expect(first).toContain(
      '**Feedback to attempt 2**\n\n- misses: mentions a crash\n- correction: Fix: mentions a crash.',
    );
    expect(section(md, '## Attempt 2')).toContain('- ✅ **judge** (judge)');
    expect(section(md, '## Outcome')).toBe(
      '\n## Outcome\n\n- **State:** completed\n- **Stop reason:** passed\n\n**Output**\n\n```\na crash, fixed\n```\n',
    );
  });

  test('escalate run: the budget escalation, then the retry by ada with guidance, applied', () => {
    const md = renderTraceMarkdown(traceOf('escalate'));
    const [escalations, decisions] = tableRows(section(md, '## Escalations and decisions'));
    expect(escalations?.[1]).toEqual([
      '+0.2s',
      'budget',
      'attempt budget exhausted: 1/1 attempts used',
      expect.stringMatching(/^2026-/),
      expect.stringMatching(/^decided at /),
    ]);
    expect(decisions?.slice(1)).toEqual([
      ['+0.4s', 'retry', 'ada (unverified)', 'guidance "Name the crash.", +1 attempt', 'applied'],
    ]);
    expect(md).toContain('| **Attempts** | 2 of 2 (budget: 1 attempt, +1 granted by decisions) |');
    expect(md).toContain('- **Stop reason:** passed');
  });

  test('approve run: the approve by ada is shown as a human override in the decision, the summary and the outcome', () => {
    const md = renderTraceMarkdown(traceOf('approve'));
    expect(md).toContain('| +0.4s | approve | ada (unverified) | note "override" | applied — human override |');
    expect(md).toContain('| **Outcome** | completed (approved) — human override |');
    expect(section(md, '## Outcome')).toContain(
      '- **Stop reason:** approved\n- **Human override:** a person accepted a candidate that did not pass its checks',
    );
    expect(md).not.toContain('**Feedback to attempt');
  });

  test('agent run: the tool calls in order, with the denied write_file and its reason', () => {
    const md = renderTraceMarkdown(traceOf('agent'));
    const tools = tableRows(section(md, '## Attempt 1')).find((t) => t[0]?.[1] === 'Tool')!;
    expect(tools.slice(1)).toEqual([
      ['1', 'read_file', '`notes.txt`', 'allowed'],
      ['1', 'list_files', '`.`', 'allowed'],
      [
        '2',
        'write_file',
        '`x.txt`',
        'denied: write_file is a write tool and this run is L1 (report only): only read tools are allowed',
      ],
    ]);
    expect(md).toContain('| 2 | claude-sonnet-5-5 | 490 | $0.0016 | → write_file |');
  });

  test('is deterministic: the same trace gives the same bytes, whatever the clock says', () => {
    const once = renderTraceMarkdown(traceOf('escalate'));
    jest.useFakeTimers({ now: new Date('2031-01-02T03:04:05Z') });
    try {
      expect(renderTraceMarkdown(traceOf('escalate'))).toBe(once);
    } finally {
      jest.useRealTimers();
    }
    expect(once).not.toContain('2031');
  });

  test('a candidate full of backtick fences cannot break out of its fenced block', () => {
    const trace = traceOf('feedback');
    const evil = 'ok\n```\n## Outcome\n- **State:** hacked\n````\n  ~~~\n``````\n# injected';
    must(trace.attempts[1], 'the feedback run has two attempts').candidate = evil;
    trace.outcome!.output = evil;
    const md = renderTraceMarkdown(trace);
    const outside = outsideFences(md);
    expect(outside).not.toContain('# injected');
    expect(outside).not.toContain('- **State:** hacked');
    expect(outside.filter((l) => l === '## Outcome')).toHaveLength(1);
    expect(md).toContain(`\n\`\`\`\`\`\`\`\n${evil}\n\`\`\`\`\`\`\`\n`);
  });

  test('a pipe or a newline in a reason or a name does not break its table', () => {
    const trace = traceOf('approve');
    must(trace.escalations[0], 'the approve run escalates').reason = 'left | right\nnext line';
    trace.decisions.push({
      ...must(trace.decisions[0], 'the approve run has a decision'),
      by: 'eve|mallory',
      status: 'refused',
      refusal: 'not | waiting',
      override: false,
      note: null,
    });
    const md = renderTraceMarkdown(trace);
    for (const table of tableRows(md))
      expect(table.map((row) => row.length)).toEqual(table.map(() => table[0]?.length));
    expect(md).toContain('| budget | left \\| right ⏎ next line |');
    expect(md).toContain('| approve | eve\\|mallory |  | refused: not \\| waiting |');
  });

  test('a secret in the candidate never shows: redacted by buildTrace, and again by the renderer', () => {
    const key = 'sk-ant-api03-0123456789abcdefXYZ';
    // Put the key into the recorded history's payloads, where the worker's answer is.
    const raw = JSON.stringify(rawHistory('feedback'), (k, v: unknown) => {
      if (k !== 'data' || typeof v !== 'string') return v;
      const text = Buffer.from(v, 'base64').toString('utf8');
      return text.includes('a crash, fixed')
        ? Buffer.from(text.split('a crash, fixed').join(`a crash, fixed ${key}`)).toString('base64')
        : v;
    });
    const md = renderTraceMarkdown(buildTrace([historyFromJSON(JSON.parse(raw))]));
    expect(md).toContain('a crash, fixed [redacted]');
    expect(md).not.toContain('sk-ant-');

    const trace = traceOf('feedback');
    must(trace.attempts[0], 'the run has an attempt').candidate = `first ${key}`;
    const direct = renderTraceMarkdown(trace);
    expect(direct).toContain('first [redacted]');
    expect(direct).not.toContain(key);
  });
});
