import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createToolRegistry, executeTool } from '../../../activities/tools/registry';
import { MAX_MATCH_LINE_CHARS, MAX_SEARCH_FILES } from '../../../activities/tools/search';
import type { ToolContext, ToolOutcome } from '../../../activities/tools/types';
import { must } from '../../../common/must';
import { removeDir, tempDir, toolContext } from './workspace';

/**
 * search against hostile input: patterns that make a backtracking engine take exponential
 * time, syntax RE2 does not have, and workloads past its bounds. Timings are compared with a
 * baseline measured in the same test (ratios, never absolute times: the machines are shared).
 */
let root: string;
const registry = createToolRegistry();

beforeEach(() => {
  root = tempDir('search-limits');
});
afterEach(() => removeDir(root));

const call = (input: unknown, overrides: Partial<ToolContext> = {}): Promise<ToolOutcome> =>
  executeTool(registry, 'search', input, toolContext(root, overrides));

/** The fastest of `runs` calls (the least disturbed by whatever else the machine does) and its outcome. */
async function fastest(fn: () => Promise<ToolOutcome>, runs = 3): Promise<{ ms: number; outcome: ToolOutcome }> {
  let best = { ms: Infinity, outcome: { content: '', isError: true } };
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    const outcome = await fn();
    const ms = performance.now() - started;
    if (ms < best.ms) best = { ms, outcome };
  }
  return best;
}

/** Lines of `a` and `b` from a fixed seed: work for a pattern that keeps many RE2 threads alive. */
function abLines(count: number, length: number, seed = 7): string {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  return Array.from(
    { length: count },
    () => Array.from({ length }, () => (next() < 0.5 ? 'a' : 'b')).join('') + '!',
  ).join('\n');
}

describe('search runs in linear time (RE2)', () => {
  // Each line makes a backtracking engine (JavaScript's RegExp) take about 2^4000 steps.
  test.each([
    ['(a+)+$', `${'a'.repeat(4000)}!`],
    ['(a|aa)+$', `${'a'.repeat(4000)}!`],
    ['(x+x+)+y', 'x'.repeat(4000)],
    ['^(\\w+\\s?)*$', `${'word '.repeat(800)}!`],
  ])(
    'catastrophic pattern %s on 1 MB of long non-matching lines finishes within a small factor of a plain pattern',
    async (pattern, line) => {
      writeFileSync(path.join(root, 'big.txt'), Array.from({ length: 250 }, () => line).join('\n'));
      const baseline = await fastest(() => call({ pattern: 'needle[0-9]', path: 'big.txt' }));
      const hostile = await fastest(() => call({ pattern, path: 'big.txt' }));
      expect(baseline.outcome).toEqual({ content: 'no matches for /needle[0-9]/ under big.txt', isError: false });
      expect(hostile.outcome).toEqual({ content: `no matches for /${pattern}/ under big.txt`, isError: false });
      expect(hostile.ms / baseline.ms).toBeLessThan(50);
    },
  );

  test('matches what a JavaScript RegExp would on ordinary patterns, (?i) included', async () => {
    writeFileSync(path.join(root, 'a.ts'), 'export const Answer = 42;\nconst answer_2 = "x";\n// no\n');
    expect((await call({ pattern: '^(export )?const \\w+ = \\d+;$' })).content).toBe(
      'a.ts:1: export const Answer = 42;',
    );
    expect((await call({ pattern: '(?i)answer' })).content).toBe(
      'a.ts:1: export const Answer = 42;\na.ts:2: const answer_2 = "x";',
    );
  });
});

describe('search refuses what RE2 cannot do, as tool errors', () => {
  test.each(['(a)\\1', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b', '(unclosed', 'a{2000}'])(
    '%s is an invalid pattern that names RE2',
    async (pattern) => {
      const outcome = await call({ pattern });
      expect(outcome.isError).toBe(true);
      expect(outcome.content).toContain(`invalid regular expression ${pattern}: `);
      expect(outcome.content).toContain('search uses RE2 syntax: no backreferences, lookahead or lookbehind');
    },
  );

  test('a pattern that compiles to too large a program is refused with its size and the limit', async () => {
    const outcome = await call({ pattern: '(\\w+\\s?){1000}$' });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/is too complex \(\d+ RE2 instructions, the limit is 500\)/);
  });

  test('a pattern over 1000 characters is invalid input', async () => {
    const outcome = await call({ pattern: 'a'.repeat(1001) });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^invalid input for search:\npattern: /);
  });
});

describe('search bounds its work and says which bound it hit', () => {
  test(`a line longer than ${MAX_MATCH_LINE_CHARS} characters is matched in its head only, with a note`, async () => {
    writeFileSync(path.join(root, 'min.js'), [`${'x'.repeat(5000)}needle`, `needle${'y'.repeat(5000)}`].join('\n'));
    const outcome = await call({ pattern: 'needle' });
    const [match, note] = outcome.content.split('\n');
    expect(match).toBe(`min.js:2: needle${'y'.repeat(294)}…`);
    expect(note).toBe(
      `[2 line(s) longer than ${MAX_MATCH_LINE_CHARS} characters were matched only in their first ${MAX_MATCH_LINE_CHARS}]`,
    );
  });

  test('stops after 32 MB read and says so; files over 2 MB are skipped and counted', async () => {
    const twoMb = `${'x'.repeat(1023)}\n`.repeat(2048);
    for (let i = 0; i < 17; i += 1) writeFileSync(path.join(root, `f${String(i).padStart(2, '0')}.txt`), twoMb);
    writeFileSync(path.join(root, 'a-huge.txt'), `${twoMb}x`);
    const outcome = await call({ pattern: 'needle' });
    expect(outcome).toEqual({
      content: [
        'no matches for /needle/ under .',
        '[search stopped early, after 32.0 MB (one search reads at most 32.0 MB): search a narrower path for the rest]',
        '[skipped 1 file(s) over 2.0 MB]',
      ].join('\n'),
      isError: false,
    });
  });

  test(`stops after ${MAX_SEARCH_FILES} files and says so, after listing and counting what it found`, async () => {
    const dir = path.join(root, 'many');
    mkdirSync(dir);
    for (let i = 0; i <= MAX_SEARCH_FILES; i += 1)
      writeFileSync(path.join(dir, `f${String(i).padStart(5, '0')}.txt`), 'needle\n');
    const lines = (await call({ pattern: 'needle' })).content.split('\n');
    expect(lines[0]).toBe('many/f00000.txt:1: needle');
    expect(lines[200]).toBe(`… ${MAX_SEARCH_FILES - 200} more`);
    expect(lines[201]).toBe(
      `[search stopped early, after ${MAX_SEARCH_FILES} files (the most one search reads): search a narrower path for the rest]`,
    );
  });

  test('gives the event loop back throughout a long search: timers keep firing while it runs', async () => {
    // `a[ab]{450}$` keeps hundreds of RE2 threads alive on every line: about 0.1 s of work per line.
    writeFileSync(path.join(root, 'ab.txt'), abLines(12, 4095));
    const ticks: number[] = [];
    const timer = setInterval(() => ticks.push(performance.now()), 1);
    const started = performance.now();
    const outcome = await call({ pattern: 'a[ab]{450}$', path: 'ab.txt' });
    const ended = performance.now();
    clearInterval(timer);
    expect(outcome).toEqual({ content: 'no matches for /a[ab]{450}$/ under ab.txt', isError: false });
    const marks = [started, ...ticks.filter((t) => t > started && t < ended), ended];
    const longestGap = Math.max(...marks.slice(1).map((t, i) => t - must(marks[i], 'the mark before t')));
    // A search that held the thread would leave one gap as long as the whole call.
    expect(marks.length).toBeGreaterThan(8);
    expect(longestGap).toBeLessThan((ended - started) / 3);
  });

  test('a search still running at its deadline comes back as a timeout and stops working', async () => {
    writeFileSync(path.join(root, 'ab.txt'), abLines(60, 4095));
    let beats = 0;
    const outcome = await call(
      { pattern: 'a[ab]{450}$', path: 'ab.txt' },
      { deadlineMs: 300, heartbeat: () => (beats += 1) },
    );
    expect(outcome).toEqual({
      content: expect.stringMatching(/^search timed out after 0\.3s: the call was stopped/),
      isError: true,
    });
    // The search heartbeats between slices; once its signal is aborted it throws at the next one.
    const atTimeout = beats;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(beats - atTimeout).toBeLessThanOrEqual(1);
  });
});
