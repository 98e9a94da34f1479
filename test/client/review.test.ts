import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { colorFor, readReviewDiff, reviewOf } from '../../client/commands/review';
import { buildReview, renderReview, reviewedAttempt, reviewJson, type ReviewDiff } from '../../client/review';
import { UsageError } from '../../common/errors';
import type { AttemptRecord, RunRecord, Verdict } from '../../common/run-record';
import type { TestEvidence } from '../../common/test-results';
import { ZERO_USAGE, type Usage } from '../../common/usage';

const usage = (inputTokens: number, outputTokens: number, costUsd: number): Usage => ({
  ...ZERO_USAGE,
  inputTokens,
  outputTokens,
  costUsd,
});
const verdict = (check: string, kind: Verdict['kind'], passed: boolean, extra: Partial<Verdict> = {}): Verdict => ({
  check,
  kind,
  passed,
  reason: passed ? `${check} ok` : `${check} failed`,
  failedItems: passed ? [] : [`${check} item`],
  requiredCorrection: passed ? '' : `fix ${check}`,
  usage: ZERO_USAGE,
  ...extra,
});
const attempt = (n: number, passed: boolean, extra: Partial<AttemptRecord> = {}): AttemptRecord => ({
  n,
  candidate: `candidate ${n}`,
  passed,
  reasons: passed ? [] : ['change policy failed'],
  verdicts: [verdict('change policy', 'diff', passed)],
  usage: usage(100 * n, 10, 0.01 * n),
  ...extra,
});
function record(extra: Partial<RunRecord> = {}): RunRecord {
  return {
    workflowId: 'fix-test/r1',
    loop: 'fix-test',
    specVersion: '3',
    autonomy: 'L2',
    task: 'fix it',
    rubricHash: 'sha256:x',
    state: 'completed',
    ok: true,
    output: 'candidate 2',
    override: false,
    attempt: 2,
    attempts: [attempt(1, false), attempt(2, true)],
    workspace: null,
    pendingReview: null,
    budget: {
      maxAttempts: 3,
      maxWallTimeMs: null,
      maxTokens: null,
      maxCostUsd: 0.5,
      maxSideEffects: null,
      used: { attempts: 2, wallTimeMs: 0, tokens: 320, costUsd: 0.03, sideEffects: 0 },
      extensions: [],
    },
    decision: null,
    decisions: [],
    stopReason: 'passed',
    escalation: null,
    usage: { total: usage(300, 20, 0.03), worker: usage(300, 20, 0.03), checker: ZERO_USAGE },
    effects: [],
    audit: null,
    error: null,
    startedAt: '2025-01-02T03:04:05.000Z',
    endedAt: '2025-01-02T03:05:05.000Z',
    ...extra,
  };
}
const waiting = (kind: 'approval' | 'budget' | 'review'): Partial<RunRecord> => ({
  state: 'awaiting_human',
  ok: false,
  output: null,
  stopReason: kind === 'budget' ? 'attempts' : 'passed',
  escalation: {
    kind,
    stopReason: 'passed',
    reason: 'attempt 2 passed its checks and waits for approval',
    since: '2025-01-02T03:05:00.000Z',
    deadline: '2025-01-05T03:05:00.000Z',
    timedOut: false,
  },
});
const ok = (patch: string): Extract<ReviewDiff, { status: 'ok' }> => ({
  status: 'ok',
  base: 'a'.repeat(40),
  head: 'b'.repeat(40),
  stat: ' src/math.js | 2 +-\n 1 file changed',
  patch,
  truncated: false,
});
const text = (
  r: RunRecord,
  diff: ReviewDiff = { status: 'none', reason: 'none: the run has no git workspace' },
  color = false,
  n?: number,
) => renderReview(buildReview(r, reviewedAttempt(r, n), diff), { color }).join('\n');

const TESTS: TestEvidence = {
  runner: 'node',
  failToPass: [{ test: 'test/math.test.js > add adds two numbers', base: 'failed', candidate: 'passed' }],
  passToPass: { total: 3, passing: 2, broken: [{ test: 'test/math.test.js > multiply', outcome: 'failed' }] },
  added: [{ test: 'test/math.test.js > add handles negatives', candidate: 'passed', base: 'failed' }],
  heldOut: { total: 4, passing: 3, failing: ['held-out > add is commutative'] },
};

describe('reviewedAttempt', () => {
  test('a run waiting for approval reviews its last attempt with a candidate; a finished run its last attempt; --attempt picks one', () => {
    const r = record({
      ...waiting('approval'),
      attempts: [
        attempt(1, false),
        attempt(2, true),
        attempt(3, false, { candidate: null, stopped: { reason: 'tokens', detail: 'token budget spent' } }),
      ],
    });
    expect(reviewedAttempt(r).n).toBe(2);
    expect(reviewedAttempt(record()).n).toBe(2);
    expect(reviewedAttempt(record(), 1).n).toBe(1);
  });

  test('a pending human review is the attempt reviewed, with its automated verdicts and no usage yet', () => {
    const r = record({
      ...waiting('review'),
      attempts: [attempt(1, false)],
      pendingReview: { attempt: 2, candidate: 'the new text', verdicts: [verdict('style', 'judge', true)] },
    });
    const a = reviewedAttempt(r);
    expect(a).toMatchObject({ n: 2, candidate: 'the new text', passed: true, awaitingReview: true, usage: null });
    expect(text(r)).toContain('this is attempt 2: passed its automated checks, waits for review');
  });

  test('a run without an attempt, or an attempt it does not have, is a usage error (exit 2) that says what to do', () => {
    const none = record({
      state: 'blocked',
      stopReason: 'setup_error',
      attempts: [],
      error: 'workspace /no/such is not a folder on this worker',
    });
    expect(() => reviewedAttempt(none)).toThrow(UsageError);
    expect(() => reviewedAttempt(none)).toThrow(
      'run fix-test/r1 has no attempt to review (state blocked, setup_error: workspace /no/such is not a folder on this worker): see `loopwright status fix-test/r1`',
    );
    expect(() => reviewedAttempt(record(), 7)).toThrow(
      'run fix-test/r1 has attempts 1 to 2: --attempt 7 is not one of them',
    );
    expect(new UsageError('x').exitCode).toBe(2);
  });
});

describe('buildReview and renderReview', () => {
  test('the header says why the run waits, until when, how to decide, attempts of the budget, tokens and cost, and the branch', () => {
    const r = record({
      ...waiting('approval'),
      workspace: { root: '/w', branch: 'loopwright/fix-test-r1' },
      sandbox: 'bwrap',
      attempts: [attempt(1, false), attempt(2, true, { commit: 'c'.repeat(40) })],
    });
    const out = text(r);
    expect(out.split('\n')[0]).toBe('fix-test/r1');
    expect(out).toContain(
      '  waiting    approval until 2025-01-05T03:05:00.000Z: attempt 2 passed its checks and waits for approval',
    );
    expect(out).toContain('decide with: loopwright approve|reject fix-test/r1 --by NAME');
    expect(out).toContain('  attempts   2/3; this is attempt 2: passed');
    expect(out).toContain('  usage      320 tokens (300 in / 20 out), $0.0300; attempt 2: 210 tokens, $0.0200');
    expect(out).toContain('  budget     cost $0.0300/$0.5000');
    expect(out).toContain(`  branch     loopwright/fix-test-r1 (attempt 2: ${'c'.repeat(12)})`);
    expect(out).toContain('  sandbox    bwrap');
  });

  test('each check shows its verdict, reason, failed items, correction, sandbox and the tail of its evidence', () => {
    const evidence = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n');
    const r = record({
      attempts: [
        attempt(1, false, {
          verdicts: [
            verdict('tests', 'command', false, { evidence, sandbox: 'bwrap' }),
            verdict('change policy', 'diff', true),
          ],
        }),
      ],
    });
    const out = text(r);
    expect(out).toContain('  FAIL  tests (command) [sandbox bwrap]: tests failed');
    expect(out).toContain('        failed: tests item');
    expect(out).toContain('        correction: fix tests');
    expect(out).toContain('        evidence (last 20 of 30 lines):');
    expect(out).toContain('          | line 30');
    expect(out).not.toContain('| line 10\n');
    expect(out).toContain('  pass  change policy (diff): change policy ok');
  });

  test('a verdict with test evidence shows fail-to-pass, pass-to-pass, the added tests and the held-out ones; the judge has its own section', () => {
    const verdicts = [
      verdict('tests', 'tests', false, { tests: TESTS }),
      verdict('quality', 'judge', false, { reason: 'the fix hides the bug', failedItems: ['fixes the cause'] }),
    ];
    const r = record({ attempts: [attempt(1, false, { verdicts })] });
    const review = buildReview(r, reviewedAttempt(r), ok(''));
    expect(review.tests).toEqual([{ check: 'tests', passed: false, tests: TESTS }]);
    expect(review.judge).toEqual([
      {
        check: 'quality',
        passed: false,
        reason: 'the fix hides the bug',
        failedItems: ['fixes the cause'],
        requiredCorrection: 'fix quality',
        rubricHash: null,
      },
    ]);
    const out = renderReview(review).join('\n');
    expect(out).toContain('tests (tests, node)');
    expect(out).toContain(
      '  fail-to-pass   1/1 pass on the candidate (base → candidate)\n    pass  test/math.test.js > add adds two numbers: failed → passed',
    );
    expect(out).toContain('  pass-to-pass   2/3 still pass\n    FAIL  test/math.test.js > multiply: passed → failed');
    expect(out).toContain(
      '    test/math.test.js > add handles negatives: passed on the candidate, failed on base (a regression test)',
    );
    expect(out).toContain('  held out       3/4 pass\n    FAIL  held-out > add is commutative');
    expect(out).toContain(
      "the judge's reasons\n  FAIL  quality: the fix hides the bug\n        failed rubric items: fixes the cause\n        correction: fix quality",
    );
    expect(out).toContain('  FAIL  quality (judge): see the judge below');
  });

  test('a record without test evidence or a judge has neither section, and says in one line why there is no diff', () => {
    const out = text(record(), {
      status: 'unavailable',
      reason: 'not readable here: the workspace /w is not on this machine',
    });
    expect(out).not.toMatch(/^tests \(/m);
    expect(out).not.toContain("the judge's reasons");
    expect(out).toContain('\ndiff: not readable here: the workspace /w is not on this machine');
    const big = text(record(), { ...ok(''), truncated: true });
    expect(big).toContain(
      ` src/math.js | 2 +-\n 1 file changed\nthe patch is too large to print: git diff ${'a'.repeat(40)} ${'b'.repeat(40)}`,
    );
  });

  test("a candidate's, a reason's, evidence's and a diff's control sequences never reach the terminal raw", () => {
    const hostile = 'done\x1b]52;c;ZXZpbA==\x07\x1b[2J\rall tests pass\u009b31m \u202eevil';
    const r = record({
      attempts: [
        attempt(1, true, {
          candidate: hostile,
          verdicts: [verdict('tests', 'command', true, { reason: `ok\x1b[1A${hostile}`, evidence: hostile })],
        }),
      ],
    });
    for (const color of [false, true]) {
      const out = text(r, ok(`diff --git a/x b/x\n@@ -1 +1 @@\n-old\n+${hostile}\n`), color);
      // With colour, the only escapes are this renderer's own SGR codes.
      expect(out.replace(/\x1b\[(?:0|1|31|32|36)m/g, '')).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/);
      expect(out).toContain('done\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\rall tests pass\\x9b31m \\u202eevil');
    }
  });

  test("a decision's by with a newline stays on its line; a candidate's and a diff's tabs are kept", () => {
    const decision = {
      id: 'd1',
      kind: 'approve' as const,
      by: 'mallory\n  decision   approve by admin',
      status: 'applied' as const,
      at: '2025-01-02T03:05:00.000Z',
    };
    const r = record({
      decision,
      decisions: [decision],
      attempts: [attempt(1, true, { candidate: 'func main() {\n\treturn\n}' })],
    });
    const lines = renderReview(buildReview(r, reviewedAttempt(r), ok('@@ -1 +1 @@\n-\tx\n+\ty\n')));
    expect(lines.filter((l) => l.includes('decision'))).toEqual([
      '  decision   approve by mallory\\n  decision   approve by admin (unverified) at 2025-01-02T03:05:00.000Z',
    ]);
    expect(lines).toContain('  \treturn');
    expect(lines).toContain('+\ty');
  });

  test('colour marks the diff (bold headers, cyan hunks, red and green lines) and passes and failures; without it the text is plain', () => {
    const patch =
      'diff --git a/src/math.js b/src/math.js\n--- a/src/math.js\n+++ b/src/math.js\n@@ -2 +2 @@ function add\n-  return a - b;\n+  return a + b;\n--- not a header, a removed line';
    const plain = text(record(), ok(patch));
    expect(plain).not.toContain('\x1b');
    expect(plain).toContain('\n-  return a - b;\n+  return a + b;\n');
    const coloured = text(record(), ok(patch), true);
    expect(coloured).toContain('\x1b[1mdiff --git a/src/math.js b/src/math.js\x1b[0m');
    expect(coloured).toContain('\x1b[1m+++ b/src/math.js\x1b[0m');
    expect(coloured).toContain('\x1b[36m@@ -2 +2 @@ function add\x1b[0m');
    expect(coloured).toContain('\x1b[31m-  return a - b;\x1b[0m\n\x1b[32m+  return a + b;\x1b[0m');
    expect(coloured).toContain('\x1b[31m--- not a header, a removed line\x1b[0m');
    expect(coloured).toContain('\x1b[32m  pass  change policy (diff): change policy ok\x1b[0m');
  });

  test('secrets are redacted in the review, its text and its JSON; the JSON parses to the same review and holds no raw control or bidi character', () => {
    const key = 'sk-ant-api03-abcdefghijklmnop';
    const r = record({
      attempts: [
        attempt(1, true, {
          candidate: `my key is ${key} \u009b2J \u202e`,
          verdicts: [verdict('t', 'command', true, { evidence: `token=${'x'.repeat(12)}` })],
        }),
      ],
    });
    const review = buildReview(r, reviewedAttempt(r), ok(`+const k = "${key}";\n`), { values: [] });
    const json = reviewJson(review);
    expect(json).not.toContain(key);
    expect(json.replace(/\n/g, '')).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e]/);
    expect(JSON.parse(json)).toEqual(review);
    expect(review).toMatchObject({
      version: 1,
      attempt: { candidate: 'my key is [redacted] \u009b2J \u202e' },
      checks: [{ evidence: 'token=[redacted]' }],
      diff: { patch: '+const k = "[redacted]";\n' },
    });
    expect(renderReview(review).join('\n')).not.toContain(key);
  });
});

describe('colorFor', () => {
  test('colour only on a terminal, and not with NO_COLOR or TERM=dumb', () => {
    expect(colorFor({ isTTY: true }, {})).toBe(true);
    expect(colorFor({ isTTY: false }, {})).toBe(false);
    expect(colorFor({}, {})).toBe(false);
    expect(colorFor({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorFor({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
  });
});

describe('readReviewDiff on a real repository the agent could have written to', () => {
  // The test's own git keeps the planted fsmonitor off; the code under test must keep all of them off by itself.
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@localhost', '-c', 'core.fsmonitor=false', ...args], {
      cwd,
      encoding: 'utf8',
    }).trim();
  function repoWithRun() {
    const dir = mkdtempSync(path.join(tmpdir(), 'lw-review-'));
    const repo = path.join(dir, 'repo');
    execFileSync('git', ['init', '-q', '-b', 'main', repo]);
    writeFileSync(path.join(repo, 'math.js'), 'return a - b;\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'base');
    const worktree = path.join(dir, 'wt');
    git(repo, 'worktree', 'add', '-q', '-b', 'loopwright/r1', worktree);
    const commitFile = (content: string, msg: string) => {
      writeFileSync(path.join(worktree, 'math.js'), content);
      git(worktree, 'commit', '-q', '-am', msg);
      return git(worktree, 'rev-parse', 'HEAD');
    };
    const c1 = commitFile('return 0;\n', 'attempt 1');
    const c2 = commitFile('return a + b;\n', 'attempt 2');
    // What a hostile agent would plant: programs that plain git runs on diff and status.
    const marker = path.join(dir, 'ran');
    const evil = path.join(dir, 'evil.sh');
    writeFileSync(evil, `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(evil, 0o755);
    for (const [k, v] of [
      ['core.fsmonitor', evil],
      ['diff.external', evil],
      ['diff.evil.textconv', evil],
      ['core.pager', evil],
    ] as const)
      git(repo, 'config', k, v);
    writeFileSync(path.join(worktree, '.gitattributes'), '* diff=evil\n');
    const r = record({
      ...waiting('approval'),
      workspace: { root: worktree, branch: 'loopwright/r1' },
      attempts: [
        attempt(1, false, { commit: c1 }),
        attempt(2, true, { commit: c2 }),
        attempt(3, false, { commit: null }),
      ],
    });
    return { repo, worktree, marker, base: git(repo, 'rev-parse', 'main'), c1, c2, r };
  }

  test("the diff runs from the branch start to the attempt, stays the same after main moves, and runs none of the repository's programs", async () => {
    const { repo, marker, base, c1, c2, r } = repoWithRun();
    const before = await readReviewDiff(r, reviewedAttempt(r, 2));
    expect(before).toMatchObject({ status: 'ok', base, head: c2, truncated: false });
    if (before.status !== 'ok') throw new Error('no diff');
    expect(before.stat.split('\n')[0]).toBe(' math.js | 2 +-');
    expect(before.patch).toContain('-return a - b;\n+return a + b;');
    writeFileSync(path.join(repo, 'other.js'), 'x\n');
    git(repo, 'add', 'other.js');
    git(repo, 'commit', '-q', '--no-verify', '-m', 'main moves on');
    expect(await readReviewDiff(r, reviewedAttempt(r, 2))).toEqual(before);
    expect(await readReviewDiff(r, reviewedAttempt(r, 1))).toMatchObject({ status: 'ok', base, head: c1 });
    // Attempt 3 changed nothing: the branch stands at attempt 2's commit.
    expect(await readReviewDiff(r, reviewedAttempt(r, 3))).toMatchObject({ status: 'ok', head: c2 });
    expect(existsSync(marker)).toBe(false);
  });

  test('an attempt still waiting for review diffs the branch tip from the merge-base with the repository HEAD', async () => {
    const { c2, base, r } = repoWithRun();
    const pending = record({
      ...waiting('review'),
      workspace: r.workspace,
      attempts: [],
      pendingReview: { attempt: 1, candidate: 'c', verdicts: [] },
    });
    expect(await readReviewDiff(pending, reviewedAttempt(pending))).toMatchObject({ status: 'ok', base, head: c2 });
  });

  test('no branch, no change, or a repository on another machine is said in one line, not thrown', async () => {
    const inPlace = record({ workspace: { root: '/tmp', branch: null } });
    expect(await readReviewDiff(inPlace, reviewedAttempt(inPlace))).toEqual({
      status: 'none',
      reason: 'none: the run worked in place, not on a branch of its own',
    });
    const elsewhere = record({ workspace: { root: '/no/such/worktree', branch: 'loopwright/r1' } });
    const d = await readReviewDiff(elsewhere, reviewedAttempt(elsewhere));
    expect(d).toEqual({
      status: 'unavailable',
      reason:
        'not readable here: the workspace /no/such/worktree is not on this machine (its worker has it; review branch loopwright/r1 there)',
    });
    const { r } = repoWithRun();
    const nothing = record({ workspace: r.workspace, attempts: [attempt(1, false, { commit: null })] });
    expect(await readReviewDiff(nothing, reviewedAttempt(nothing))).toEqual({
      status: 'none',
      reason: 'none: attempt 1 changed no file',
    });
    expect((await reviewOf(r, { diff: false })).diff).toEqual({ status: 'skipped', reason: 'not shown (--no-diff)' });
  });
});
