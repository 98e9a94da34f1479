import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { harnessState, publishHarness } from '../harness/store';
import type { CurrentHarness } from '../common/improve/types';
import { planRun } from '../loops/plan-run';
import { readPrices, type ModelPrice } from '../common/pricing';
import { readConfig } from '../common/config';
import { LoopwrightError } from '../common/errors';
import { mineFailures, type MineResult } from '../common/improve/mining';
import type { FailureGroup, Harness, RegressionTask } from '../common/improve/types';
import type { LoopInput } from '../common/loop-input';
import type { ToolDefinition, ToolUseBlock } from '../common/model-messages';
import type { RunRecord } from '../common/run-record';
import type { Usage } from '../common/usage';
import { getLoop } from '../loops';
import { allOf, clause, oneOf } from '../common/visibility-query';
import { LOOP_RUN_TYPES, type loopWorkflow } from '../workflows/loop/loop-workflow';
import type { ModelReply, ModelRequest } from './model';

/** Runs read per mining (the newest first); older ones are left out and counted. */
const MAX_RUNS = 500;

export const PROPOSAL_TOOL_NAME = 'submit_proposal';

/** The proposer's one tool: its whole answer, as `ProposalSchema` reads it. */
const PROPOSAL_TOOL: ToolDefinition = {
  name: PROPOSAL_TOOL_NAME,
  description: 'Submit one bounded change to the harness and its change contract.',
  inputSchema: {
    type: 'object',
    properties: {
      changes: {
        type: 'array',
        description:
          'paths into the harness (systemPrompt, knowledge.<name>, toolDescriptions.<tool>) and their whole new text; null removes a knowledge document',
        items: {
          type: 'object',
          properties: { path: { type: 'string' }, value: { type: ['string', 'null'] } },
          required: ['path', 'value'],
        },
      },
      contract: {
        type: 'object',
        properties: {
          failingRuns: { type: 'array', items: { type: 'string' } },
          occurrences: { type: 'integer' },
          rootCause: { type: 'string' },
          expectedImprovement: { type: 'string' },
          rollback: { type: 'string' },
        },
        required: ['failingRuns', 'occurrences', 'rootCause', 'expectedImprovement', 'rollback'],
      },
    },
    required: ['changes', 'contract'],
  },
};

const PROPOSER_SYSTEM = [
  "You improve an AI agent's harness: its system prompt, its knowledge documents and its tool descriptions.",
  'You are shown a failure that repeated across runs, with examples, and the current harness.',
  'Propose the smallest change to the harness that would prevent it, and nothing else: you may not change the rubric, the checks, the budgets, the autonomy level, the tools the loop may use, or this improvement loop.',
  `Answer with exactly one ${PROPOSAL_TOOL_NAME} call.`,
].join('\n');

export interface ProposeInput {
  workflowId: string;
  loop: string;
  harness: Harness;
  tools: string[];
  group: FailureGroup;
  model: string;
  price: ModelPrice;
}

/** The proposer's answer: the raw tool input (the workflow checks it) and the call's usage. */
export interface ProposeResult {
  proposal: unknown;
  error: string | null;
  usage: Usage;
}

/** Asks the proposer model (role `proposer`) for one change; a missing or doubled tool call is an error in the result. */
export async function proposeChange(
  callModel: (req: ModelRequest) => Promise<ModelReply>,
  input: ProposeInput,
): Promise<ProposeResult> {
  const g = input.group;
  const prompt = [
    `Loop: ${input.loop}. Its tools: ${input.tools.join(', ') || 'none'}.`,
    '',
    `Repeated failure: check "${g.check}"${g.item ? `, rubric item "${g.item}"` : ''}, in ${g.runs.length} runs (${g.occurrences} times): ${g.runs.join(', ')}.`,
    'Examples of the reason given:',
    ...g.examples.map((e) => `- ${e}`),
    '',
    'Current harness (JSON):',
    JSON.stringify(input.harness, null, 2),
  ].join('\n');
  const reply = await callModel({
    role: 'proposer',
    model: input.model,
    workflowId: input.workflowId,
    attempt: 1,
    system: PROPOSER_SYSTEM,
    messages: [{ role: 'user', content: prompt }],
    tools: [PROPOSAL_TOOL],
    toolChoice: { type: 'tool', name: PROPOSAL_TOOL_NAME },
    maxTokens: 8192,
    price: input.price,
  });
  const calls = reply.content.filter((b): b is ToolUseBlock => b.type === 'tool_use' && b.name === PROPOSAL_TOOL_NAME);
  const [call] = calls;
  if (call === undefined || calls.length !== 1)
    return {
      proposal: null,
      error: `expected one ${PROPOSAL_TOOL_NAME} call, got ${calls.length}`,
      usage: reply.usage,
    };
  return { proposal: call.input, error: null, usage: reply.usage };
}

/** The records of the loop's closed runs since `sinceMs`, mined for repeated failures. */
export async function mineRecentFailures(input: {
  loop: string;
  sinceMs: number;
  minOccurrences: number;
}): Promise<MineResult & { truncated: boolean }> {
  const client = Context.current().client;
  const since = new Date(input.sinceMs).toISOString();
  // The runs of this deployment (task queue) only: another deployment's runs have their own harness.
  const query = allOf(
    oneOf('WorkflowType', LOOP_RUN_TYPES),
    clause('LoopName', input.loop),
    clause('TaskQueue', Context.current().info.taskQueue),
    clause('ExecutionStatus', 'Completed'),
    clause('CloseTime', since, '>'),
  );
  const records: RunRecord[] = [];
  let truncated = false;
  for await (const wf of client.workflow.list({ query })) {
    if (records.length >= MAX_RUNS) {
      truncated = true;
      break;
    }
    records.push(await client.workflow.getHandle<typeof loopWorkflow>(wf.workflowId, wf.runId).result());
    Context.current().heartbeat();
  }
  // Oldest first, so each group lists its runs in the order they failed.
  records.sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
  return { ...mineFailures(records, { minOccurrences: input.minOccurrences }), truncated };
}

/** What the improvement needs of the loop's store: the current harness, the regression set and the loop's tools. */
export async function readHarnessStore(input: {
  loop: string;
}): Promise<{ current: CurrentHarness; regression: RegressionTask[]; tools: string[] }> {
  const client = Context.current().client;
  const state = await harnessState(client, input.loop, Context.current().info.taskQueue);
  const current = state.versions.find((v) => v.version === state.current)!;
  const loop = getLoop(input.loop);
  const example = planRun(
    input.loop,
    loop.example,
    { models: { worker: 'm', checker: 'm' }, prices: {} },
    { kind: 'client' },
  );
  return {
    current: { version: current.version, harness: current.harness },
    regression: state.regression,
    tools: example.spec.agent.tools,
  };
}

/** A regression task's run under `harness`, planned as a user's run would be, marked as an evaluation. */
export function planEvaluationRun(
  env: Record<string, string | undefined>,
  input: { loop: string; task: RegressionTask; harness: CurrentHarness; by: string },
): LoopInput {
  const config = readConfig(env);
  try {
    const plan = planRun(
      input.loop,
      input.task.input,
      { models: { worker: config.workerModel, checker: config.checkerModel }, prices: readPrices(env) },
      { kind: 'client', by: input.by },
      input.harness,
    );
    return { ...plan, evaluation: true };
  } catch (err) {
    if (err instanceof LoopwrightError)
      throw ApplicationFailure.create({
        type: err.name,
        nonRetryable: true,
        message: `regression task ${input.task.id}: ${err.message}`,
      });
    throw err;
  }
}

/** Publishes an approved harness as the loop's new current version. */
export async function publishApproved(input: {
  loop: string;
  harness: Harness;
  by: string;
  reason: string;
  proposedBy: string;
}): Promise<number> {
  return publishHarness(Context.current().client, Context.current().info.taskQueue, input);
}
