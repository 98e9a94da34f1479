import { randomBytes } from 'node:crypto';
import { CODE_REVIEW_SYSTEM_PROMPT, renderChangeCandidate, type ChangeDiff } from '../../common/code-review';
import type { JudgeCheck, ModelTimeouts } from '../../common/loop-spec';
import type { ModelPrice } from '../../common/pricing';
import {
  BOUNDARY_CODE_LENGTH,
  JUDGE_SYSTEM_PROMPT,
  VERDICT_TOOL,
  VERDICT_TOOL_NAME,
  boundaryLines,
  codeIsFree,
  countLines,
  escapeUntrusted,
  parseVerdict,
  renderJudgePrompt,
} from '../../common/judge';
import type { Verdict } from '../../common/run-record';
import { resolveCommit } from '../git/commit-tree';
import { withPrivateObjects } from '../git/private-objects';
import { snapshotWorkingTree } from '../git/snapshot';
import { GitError, workerGit } from '../git/worker-git';
import type { ModelReply, ModelRequest } from '../model';
import { hashRubric } from '../../loops/rubric-hash';
import { FailureType, nonRetryableFailure } from '../../common/failure-types';

/** The change a judge reviews: where it is and what to compare. */
export interface JudgeChange {
  /** The run's workspace (for L2, its git worktree). */
  root: string;
  /** The commit the run started from. */
  base: string;
  /** The attempt's commit; null: the attempt made no commit, and the workspace's working state is compared with base. */
  commit: string | null;
}

export interface JudgeInput {
  workflowId: string;
  attempt: number;
  model: string;
  check: JudgeCheck;
  task: string;
  /** The candidate; with `change`, the agent's final message, shown apart as unverified claims. */
  candidate: string;
  /** max_tokens for the verdict, as the run's budget allows (at most 1024). */
  maxTokens: number;
  price: ModelPrice;
  /** Set for tool-using loops: the candidate the judge sees is this change's diff, not the agent's text. */
  change?: JudgeChange;
  /** With `change`: short summaries of the attempt's other verdicts (common/code-review.ts `summarizeVerdicts`). */
  evidence?: string[];
  /** The model call's total deadline and idle timeout (the loop's `models.timeouts`). */
  timeouts?: ModelTimeouts;
}

/** What a test may replace: where the boundary code comes from (default: 128 bits from node:crypto). */
export interface JudgeOptions {
  drawCode?: () => string;
}

/** Most bytes git may print for a patch, and for the file list; more is reported as not shown. */
const PATCH_LIMIT_BYTES = 32 * 1024 * 1024;
const STAT_LIMIT_BYTES = 8 * 1024 * 1024;
/**
 * Every option that the repository's config could otherwise change is pinned: no external diff
 * or textconv, `--text` so a `.gitattributes` entry (`-diff`, `binary`) cannot hide a file's
 * content (real binaries are recognised and listed by common/code-review.ts), no relative
 * paths, no order file, fixed prefixes, renames found; the patch has three lines of context
 * (`-U` implies a patch, so the stat goes without it). The stat still follows the attributes
 * (a file marked binary there shows as `Bin`); the patch shows its text.
 */
const DIFF_ARGS = [
  'diff',
  '--no-color',
  '--no-ext-diff',
  '--no-textconv',
  '--text',
  '--ignore-submodules=dirty',
  '--no-relative',
  '-O/dev/null',
  '--src-prefix=a/',
  '--dst-prefix=b/',
  '-M',
];
const CODE_TRIES = 8;

const tooLarge = (err: unknown) => err instanceof GitError && err.exitCode === null && /output passed/.test(err.reason);

/**
 * Reads the change with the worker's hardened git: the diff of base against the attempt's commit
 * (or the working state, snapshotted into a private object store removed after: nothing lands in
 * the repository, see git/private-objects.ts).
 */
export async function readChange(change: JudgeChange): Promise<ChangeDiff> {
  return withPrivateObjects(change.root, () => diffOf(change));
}

async function diffOf(change: JudgeChange): Promise<ChangeDiff> {
  const { root } = change;
  const resolve = (rev: string) => (rev.startsWith('-') ? Promise.resolve(undefined) : resolveCommit(root, rev));
  const base = await resolve(change.base);
  if (!base)
    throw nonRetryableFailure(
      FailureType.Workspace,
      `judge: base ${change.base} is not a commit in the repository at ${root}: give the commit the run started from`,
    );
  let target: string;
  if (change.commit !== null) {
    const commit = await resolve(change.commit);
    if (!commit)
      throw nonRetryableFailure(
        FailureType.Workspace,
        `judge: the attempt's commit ${change.commit} is not a commit in the repository at ${root}`,
      );
    target = commit;
  } else {
    target = await snapshotWorkingTree(root).catch((err: Error) => {
      throw nonRetryableFailure(
        FailureType.Workspace,
        `judge: cannot read the working state of ${root}: ${err.message}`,
      );
    });
  }
  const range = [base, target, '--'];
  const stat = await workerGit(root, [...DIFF_ARGS, '--stat=300,240', '--stat-graph-width=40', ...range], {
    maxBuffer: STAT_LIMIT_BYTES,
  }).catch((err: unknown) => {
    if (tooLarge(err)) return ` (the file list is longer than ${STAT_LIMIT_BYTES} bytes and is not shown)\n`;
    throw err;
  });
  const diff = { base, commit: change.commit === null ? null : target, stat, patchLimitBytes: PATCH_LIMIT_BYTES };
  if (stat.trim() === '') return { ...diff, patch: '' };
  const patch = await workerGit(root, [...DIFF_ARGS, '--patch', '-U3', ...range], {
    maxBuffer: PATCH_LIMIT_BYTES,
  }).catch((err: unknown) => {
    if (tooLarge(err)) return null;
    throw err;
  });
  return { ...diff, patch };
}

/** A fresh random boundary code that none of `texts` contains (redrawn on the astronomically unlikely collision). */
export function drawBoundaryCode(
  texts: readonly string[],
  draw: () => string = () => randomBytes(BOUNDARY_CODE_LENGTH / 2).toString('hex'),
): string {
  for (let i = 0; i < CODE_TRIES; i++) {
    const code = draw();
    if (new RegExp(`^[0-9a-f]{${BOUNDARY_CODE_LENGTH}}$`).test(code) && codeIsFree(code, texts)) return code;
  }
  throw nonRetryableFailure(FailureType.Judge, `judge: no boundary code absent from the prompt in ${CODE_TRIES} draws`);
}

/** The judge's system prompt and message for one call, with a boundary code of its own. */
export async function buildJudgeRequest(
  input: JudgeInput,
  opts: JudgeOptions = {},
): Promise<{ system: string; prompt: string; code: string }> {
  const rubric = input.check.rubric;
  const candidate = input.change
    ? renderChangeCandidate(await readChange(input.change), input.evidence ?? [])
    : input.candidate;
  const agentMessage = input.change ? input.candidate : undefined;
  const texts = [input.task, ...rubric, candidate, agentMessage ?? ''];
  const code = drawBoundaryCode([...texts, ...texts.map(escapeUntrusted)], opts.drawCode);
  const prompt = renderJudgePrompt({ rubric, task: input.task, candidate, agentMessage, code });
  // The escaping guarantees this; a prompt that breaks it is never sent.
  const lines = boundaryLines(code);
  const blocks = agentMessage === undefined ? [lines.candidate] : [lines.candidate, lines.agentMessage];
  for (const { begin, end } of blocks) {
    const at = prompt.split('\n');
    if (countLines(prompt, begin) !== 1 || countLines(prompt, end) !== 1 || at.indexOf(begin) > at.indexOf(end)) {
      throw nonRetryableFailure(
        FailureType.Judge,
        `judge: the prompt does not hold exactly one ${begin} line before one ${end} line`,
      );
    }
  }
  return { system: input.change ? CODE_REVIEW_SYSTEM_PROMPT : JUDGE_SYSTEM_PROMPT, prompt, code };
}

/**
 * The LLM judge. Its context is fresh: the judge system prompt and one message with the rubric,
 * the task and the candidate between boundary lines whose random code is drawn for this call;
 * nothing of the worker's prompt or earlier attempts. With `change`, the candidate is the change
 * (its diff read with the worker's git, then `evidence`) and the agent's final message follows in
 * a block of its own, marked as unverified claims; the system prompt says how to review a change.
 * The verdict comes through a forced `submit_verdict` tool call and fails closed. A change that
 * cannot be read (base or commit missing) fails with a non-retryable `WorkspaceError`, before
 * any model call.
 */
export async function judgeCandidate(
  callModel: (req: ModelRequest) => Promise<ModelReply>,
  input: JudgeInput,
  opts: JudgeOptions = {},
): Promise<Verdict> {
  const { system, prompt } = await buildJudgeRequest(input, opts);
  const reply = await callModel({
    role: 'checker',
    model: input.model,
    workflowId: input.workflowId,
    attempt: input.attempt,
    system,
    messages: [{ role: 'user', content: prompt }],
    tools: [VERDICT_TOOL],
    toolChoice: { type: 'tool', name: VERDICT_TOOL_NAME },
    maxTokens: input.maxTokens,
    price: input.price,
    timeouts: input.timeouts,
  });
  const verdict = parseVerdict(reply.content);
  return {
    check: input.check.name,
    kind: 'judge',
    ...verdict,
    rubricHash: hashRubric(input.check.rubric),
    usage: reply.usage,
  };
}
