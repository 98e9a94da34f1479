import { condition, executeChild, patched, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import { forDisplay } from '../../common/redact';
import { decisionWait, type AppliedDecision, type DecisionRecord } from '../../common/decision';
import { trustRecord, type Trust, type TrustRecord } from '../../common/trust-record';
import { decisionsAnswered, handleDecisions } from '../decisions';
import { proposerCallSummary } from '../../common/activity-summary';
import { readProposal } from '../../common/improve/proposal-shape';
import { summarizeEvaluation, heldOutTasks, type EvaluationSummary } from '../../common/improve/evaluate';
import { checkProposal } from '../../common/improve/proposal';
import type { EvalRun, FailureGroup, Harness, Proposal, RegressionTask } from '../../common/improve/types';
import type { ModelPrice } from '../../common/pricing';
import type { RunRecord } from '../../common/run-record';
import { addUsage, ZERO_USAGE, type Usage } from '../../common/usage';
import { acts, CHECK_CALL, MODEL_CALL, TOOL_CALL } from '../activity-proxies';
import { loopWorkflow } from '../loop/loop-workflow';
import { improveStateQuery } from '../messages';
import { FailureType } from '../../common/failure-types';

/** The input of an improvement run (`loopwright improve <loop>`). */
export interface ImproveInput {
  loop: string;
  /** Runs that closed within this window before the improvement started (ms) are mined. */
  windowMs: number;
  /** A failure must occur in this many distinct runs before it can lead to a proposal. */
  minOccurrences: number;
  /** Repeats of each regression task per harness (k). */
  repeats: number;
  /** Share of the regression set held out (reported apart). */
  heldOutShare: number;
  /** How long an accepted candidate waits for a person's review (ms). */
  reviewTimeoutMs: number;
  proposer: { model: string; price: ModelPrice };
  /** Who or what started it (a name, a schedule). */
  by: string;
}

export type ImproveState =
  | 'mining'
  | 'proposing'
  | 'evaluating'
  | 'awaiting_review'
  | 'approved'
  | 'rejected'
  | 'review_expired'
  | 'no_proposal'
  | 'refused'
  | 'not_better'
  | 'failed';

/** What an improvement run did and why; its `state` query and its result. */
export interface ImprovementRecord {
  workflowId: string;
  loop: string;
  state: ImproveState;
  /** One line: why it is where it is. */
  reason: string;
  mined: { considered: number; groups: FailureGroup[]; truncated: boolean } | null;
  /** The failure group the proposal answers. */
  group: FailureGroup | null;
  baseVersion: number | null;
  proposal: Proposal | null;
  /** The proposer's answer when it was refused before evaluation, and why. */
  refusal: { reason: string; outside: string[]; proposal: unknown } | null;
  candidate: Harness | null;
  changed: string[];
  evaluation: EvaluationSummary | null;
  evalRuns: EvalRun[];
  decisions: DecisionRecord[];
  /** The allowed signers the improvement pinned at start (approvals publish a harness: signed where the worker has a list). */
  trust?: TrustRecord;
  /** The version the approval published. */
  published: number | null;
  usage: Usage;
  startedAt: string;
  endedAt: string | null;
}

/** Children running at once during an evaluation. */
const PARALLEL = 6;

/**
 * The improvement loop: mine the loop's recent failures; when one repeats in at least
 * `minOccurrences` runs, ask the proposer for one bounded change to the harness; refuse a change
 * outside the improvable surface before anything runs; evaluate the candidate and the current
 * harness on the regression set, `repeats` times each, as child runs under the same checks;
 * accept only a candidate that breaks nothing that passed and gains more than the noise; then wait
 * for a person. Approval publishes the candidate as the loop's new current version (used by runs
 * that start afterwards); nothing is ever applied without it.
 */
export async function improveWorkflow(input: ImproveInput): Promise<ImprovementRecord> {
  const record = await improve(input);
  await decisionsAnswered();
  return record;
}

async function improve(input: ImproveInput): Promise<ImprovementRecord> {
  const record: ImprovementRecord = {
    workflowId: workflowInfo().workflowId,
    loop: input.loop,
    state: 'mining',
    reason: `mining ${input.loop} runs`,
    mined: null,
    group: null,
    baseVersion: null,
    proposal: null,
    refusal: null,
    candidate: null,
    changed: [],
    evaluation: null,
    evalRuns: [],
    decisions: [],
    published: null,
    usage: { ...ZERO_USAGE },
    startedAt: new Date().toISOString(),
    endedAt: null,
  };
  let pending: AppliedDecision | undefined;
  let trust: Trust | undefined;
  const to = (state: ImproveState, reason: string) => {
    Object.assign(record, { state, reason });
    setCurrentDetails(forDisplay(`**improve ${input.loop}**: ${state}\n\n${reason}`));
  };
  const end = (state: ImproveState, reason: string) => {
    to(state, reason);
    record.endedAt = new Date().toISOString();
    return record;
  };

  setHandler(improveStateQuery, () => record);
  /** Whether the trust is loaded (or known to be absent): decisions that came before wait for it. */
  let trustSettled = false;
  handleDecisions(
    record.workflowId,
    () => trust,
    () => record.decisions,
    {
      refusal: (d) =>
        record.state !== 'awaiting_review' || pending
          ? `the improvement is ${record.state}, not waiting for a review`
          : d.kind !== 'approve' && d.kind !== 'reject'
            ? `${d.kind} does not apply to an improvement: approve or reject it`
            : undefined,
      approvers: () => [],
      // Approving publishes a new harness for every later run of the loop: an effect.
      effects: (d) => d.kind === 'approve',
      wait: () => decisionWait(record),
    },
    (entry) => (pending = entry),
    () => trustSettled,
  );
  if (patched('trust')) {
    trust = await acts.loadTrust.executeWithOptions({ ...TOOL_CALL, summary: 'trust' }, [
      { loop: input.loop, autonomy: 'L1', commits: false },
    ]);
    record.trust = trustRecord(trust);
  }
  trustSettled = true;

  // Workflow time: the same on replay, and a schedule's runs each look back from when they fire.
  const sinceMs = Date.now() - input.windowMs;
  to('mining', `reading ${input.loop} runs closed since ${new Date(sinceMs).toISOString()}`);
  const mined = await acts.mineRecentFailures.executeWithOptions(
    { ...CHECK_CALL, summary: `mine ${input.loop} failures` },
    [{ loop: input.loop, sinceMs, minOccurrences: input.minOccurrences }],
  );
  record.mined = { considered: mined.considered, groups: mined.groups, truncated: mined.truncated };
  const group = mined.groups[0];
  if (!group)
    return end(
      'no_proposal',
      `no failure repeated in ${input.minOccurrences} or more of the ${mined.considered} runs read: nothing to propose`,
    );
  record.group = group;

  const store = await acts.readHarnessStore.executeWithOptions({ ...TOOL_CALL, summary: `harness of ${input.loop}` }, [
    { loop: input.loop },
  ]);
  record.baseVersion = store.current.version;
  to(
    'proposing',
    `${group.check}${group.item ? ` / ${group.item}` : ''} failed in ${group.runs.length} runs: asking the proposer`,
  );
  const proposed = await acts.proposeChange.executeWithOptions(
    {
      ...MODEL_CALL,
      retry: { maximumAttempts: 3, nonRetryableErrorTypes: [FailureType.ModelRequest] },
      summary: proposerCallSummary(input.proposer.model, input.loop),
    },
    [
      {
        workflowId: record.workflowId,
        loop: input.loop,
        harness: store.current.harness,
        tools: store.tools,
        group,
        model: input.proposer.model,
        price: input.proposer.price,
      },
    ],
  );
  record.usage = addUsage(record.usage, proposed.usage);
  const parsed = readProposal(proposed.proposal);
  if (proposed.error || !parsed.ok) {
    const why = proposed.error ?? (parsed.ok ? '' : parsed.issues.join('; '));
    record.refusal = {
      reason: `the proposer's answer is not a proposal: ${why}`,
      outside: [],
      proposal: proposed.proposal,
    };
    return end('refused', record.refusal.reason);
  }
  const checked = checkProposal(parsed.proposal, store.current.harness, store.tools);
  if (!checked.ok) {
    record.refusal = { reason: checked.refusal, outside: checked.outside, proposal: parsed.proposal };
    return end('refused', checked.refusal);
  }
  Object.assign(record, { proposal: parsed.proposal, candidate: checked.harness, changed: checked.changed });

  const tasks = store.regression;
  if (tasks.length === 0)
    return end(
      'not_better',
      `${input.loop} has no regression set: add tasks with \`loopwright regression add ${input.loop} --from-run <id>\``,
    );
  to(
    'evaluating',
    `${tasks.length} regression tasks × ${input.repeats} repeats × 2 harnesses (v${store.current.version} and the candidate)`,
  );
  record.evalRuns = await evaluate(tasks, [
    { arm: 'current', harness: store.current },
    { arm: 'candidate', harness: { version: store.current.version + 1, harness: checked.harness } },
  ]);
  for (const r of record.evalRuns) record.usage.costUsd += r.costUsd;
  const ids = tasks.map((t) => t.id);
  record.evaluation = summarizeEvaluation(record.evalRuns, {
    tasks: ids,
    heldOut: heldOutTasks(ids, input.heldOutShare),
    k: input.repeats,
  });
  if (!record.evaluation.accepted) return end('not_better', record.evaluation.reason);

  to(
    'awaiting_review',
    `${record.evaluation.reason}. Approve to make it ${input.loop}'s harness v${store.current.version + 1}: loopwright approve ${record.workflowId} --by <name>`,
  );
  const decided = await condition(() => pending !== undefined, input.reviewTimeoutMs, { summary: 'wait for a review' });
  if (!decided) return end('review_expired', 'nobody reviewed the candidate in time; the current harness stays');
  const decision = pending!;
  if (decision.kind === 'reject')
    return end('rejected', `rejected by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`);
  record.published = await acts.publishApproved.executeWithOptions(
    { ...TOOL_CALL, summary: `publish ${input.loop} harness` },
    [
      {
        loop: input.loop,
        harness: checked.harness,
        by: decision.by,
        reason: `${group.check}${group.item ? ` / ${group.item}` : ''}: ${parsed.proposal.contract.expectedImprovement}`,
        proposedBy: record.workflowId,
      },
    ],
  );
  return end('approved', `approved by ${decision.by}: ${input.loop} now runs harness v${record.published}`);

  /** Every task × repeat × arm as a child loop run (at most PARALLEL at once), in a stable order. */
  async function evaluate(
    all: RegressionTask[],
    arms: Array<{ arm: EvalRun['arm']; harness: { version: number; harness: Harness } }>,
  ): Promise<EvalRun[]> {
    const jobs = all.flatMap((task) =>
      arms.flatMap(({ arm, harness }) =>
        Array.from({ length: input.repeats }, (_, repeat) => ({ task, arm, harness, repeat })),
      ),
    );
    const plans = new Map<string, Awaited<ReturnType<typeof acts.planEvaluationRun>>>();
    for (const { task, arm, harness } of jobs) {
      const key = `${task.id}/${arm}`;
      if (!plans.has(key))
        plans.set(
          key,
          await acts.planEvaluationRun.executeWithOptions({ ...TOOL_CALL, summary: `plan ${task.id} (${arm})` }, [
            { loop: input.loop, task, harness, by: record.workflowId },
          ]),
        );
    }
    const results: EvalRun[] = new Array(jobs.length);
    // One queue for every worker: each takes the next job when it is free, in order.
    const queue = jobs.entries();
    const worker = async () => {
      for (const [i, { task, arm, repeat }] of queue) {
        const workflowId = `${record.workflowId}/eval/${task.id}/${arm}/${repeat + 1}`;
        // loopWorkflow, not V2: an evaluation pins no trust, so it asks no 'lean-start' patch and
        // V2 would save little; and improvements in flight replay starting this type.
        const run: RunRecord = await executeChild(loopWorkflow, {
          args: [plans.get(`${task.id}/${arm}`)!],
          workflowId,
          staticSummary: `evaluation of ${input.loop} ${task.id} (${arm}, repeat ${repeat + 1})`,
        });
        results[i] = {
          task: task.id,
          arm,
          repeat,
          success: (run.state === 'completed') === (task.expect === 'pass'),
          costUsd: run.usage.total.costUsd,
          workflowId,
        };
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, jobs.length) }, worker));
    return results;
  }
}
