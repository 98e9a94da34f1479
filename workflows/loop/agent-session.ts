import { forDisplay } from '../../common/redact';
import {
  gateTool,
  type SessionSetup,
  type ToolCallRecord,
  type ToolCallRef,
  type ToolResultRef,
} from '../../common/agent';
import { parseDuration } from '../../common/duration';
import { priceOf } from '../../common/pricing';
import { renderWorkerPrompt } from '../../common/prompts';
import { modelTimeouts, modelTimeoutsArg } from '../../common/loop-rules';
import { acts, modelCallOptions, TOOL_CALL } from '../activity-proxies';
import { agentTurnSummary, toolCallSummary } from '../../common/activity-summary';
import type { AttemptOutcome, AttemptProgress } from './attempt';
import type { LoopRun } from './loop-run';
import { callWithinBudget } from './model-call';
import type { SessionCheckpoint } from './resume';
import { outputVerdict } from './record-keeping';

/** Rough size of the tool definitions in the prompt, per tool (for the input estimate). */
const TOOL_DEF_CHARS = 600;

/**
 * An attempt as an agent session: model turn (activity) → tool calls (activities; read-only
 * calls in parallel, others one by one in order) → tool results → next turn, until the model
 * answers without calling a tool, bounded by `maxTurns` and the run's budgets. Every call
 * passes the autonomy gate first: a denied call is not scheduled, the model gets a tool error
 * that says why, and the denial is in the record. The conversation stays in the transcript
 * store; history carries the head reference, tool names and summaries, and the final text.
 */
export async function runAgentSession(
  run: LoopRun,
  setup: SessionSetup,
  n: number,
  progress: AttemptProgress,
  resumeFrom?: SessionCheckpoint,
): Promise<AttemptOutcome> {
  const { input, workflowId } = run;
  const agent = input.spec.agent;
  const model = input.spec.models.worker;
  const price = priceOf(model, input.prices);
  const available = setup.tools.map((t) => t.name);
  const classOf = (name: string) => setup.tools.find((t) => t.name === name)?.class;
  const offered = available.filter((name) => gateTool(input.spec.autonomy, name, classOf(name), available) === null);
  const userText = renderWorkerPrompt(input.task, run.feedback);
  let head: string | null = resumeFrom?.head ?? null;
  let pending: ToolResultRef[] | undefined = resumeFrom?.pending;
  let contextChars =
    resumeFrom?.contextChars ?? agent.systemPrompt.length + userText.length + offered.length * TOOL_DEF_CHARS;
  progress.toolCalls = resumeFrom ? [...resumeFrom.toolCalls] : [];
  const firstTurn = resumeFrom?.turn ?? 1;
  const timeouts = modelTimeouts(input.spec.models);

  for (let turn = firstTurn; turn <= agent.maxTurns; turn++) {
    // A long session hands over to a fresh run between turns when Temporal suggests it.
    if (turn > firstTurn && run.shouldContinueAsNew()) {
      return { kind: 'suspended', checkpoint: { turn, head, pending, contextChars, toolCalls: progress.toolCalls } };
    }
    progress.turns = turn;
    const pendingChars = (pending ?? []).reduce((sum, r) => sum + (r.text?.length ?? agent.toolOutputCapChars), 0);
    const result = await callWithinBudget({
      what: `worker turn ${turn} (attempt ${n})`,
      run,
      role: 'worker',
      inputChars: contextChars + pendingChars,
      requestedMaxTokens: agent.maxTokens,
      price,
      invoke: (maxTokens, tryNo) =>
        acts.modelTurn.executeWithOptions(
          { ...modelCallOptions(timeouts), summary: agentTurnSummary(model, turn, n, tryNo) },
          [
            {
              workflowId,
              attempt: n,
              turn,
              model,
              price,
              systemPrompt: agent.systemPrompt,
              toolNames: offered,
              maxTokens,
              contextBudgetChars: agent.contextBudgetChars,
              head,
              userText: turn === 1 ? userText : undefined,
              toolResults: pending,
              ...(agent.toolDescriptions ? { toolDescriptions: agent.toolDescriptions } : {}),
              ...modelTimeoutsArg(input.spec.models),
            },
          ],
        ),
    });
    if (!result.ok) return { kind: 'stopped', stopReason: result.stopReason, detail: result.detail };
    const answer = result.value;
    head = answer.head;
    contextChars = answer.contextChars + offered.length * TOOL_DEF_CHARS;
    if (answer.toolCalls.length === 0) {
      progress.candidate = answer.text;
      return { kind: 'checked' };
    }
    pending = await runCalls(answer.toolCalls, turn);
  }
  progress.candidate = '';
  progress.verdicts.push(
    outputVerdict(
      `step cap: the agent used all ${agent.maxTurns} turns without a final answer`,
      `finish with a final answer (no tool call) within ${agent.maxTurns} turns`,
    ),
  );
  return { kind: 'checked' };

  async function runCalls(calls: ToolCallRef[], turn: number): Promise<ToolResultRef[]> {
    // The record lists the calls in the order the model made them, whatever order they finish in.
    const records: ToolCallRecord[] = [];
    const one = async (call: ToolCallRef, i: number): Promise<ToolResultRef> => {
      const denied = gateTool(input.spec.autonomy, call.name, classOf(call.name), available);
      if (denied) {
        records[i] = { turn, name: call.name, summary: call.summary, allowed: false, reason: denied, isError: true };
        return { toolUseId: call.id, isError: true, text: `denied: ${denied}` };
      }
      const done = await acts.runTool.executeWithOptions(
        { ...TOOL_CALL, summary: forDisplay(toolCallSummary(call.name, call.summary), { names: input.redact ?? [] }) },
        [
          {
            workflowId,
            attempt: n,
            turn,
            assistantHead: head!,
            toolUseId: call.id,
            name: call.name,
            root: setup.root,
            autonomy: input.spec.autonomy,
            available,
            allowedCommands: agent.commandAllowList,
            commandTimeoutMs: parseDuration(agent.commandTimeout) ?? 120_000,
            outputCapChars: agent.toolOutputCapChars,
            ...(input.spec.sandbox ? { commandEnv: input.spec.sandbox.env } : {}),
          },
        ],
      );
      records[i] = {
        turn,
        name: call.name,
        summary: call.summary,
        allowed: true,
        isError: done.isError,
        preview: done.preview,
        bytes: done.bytes,
        ...(done.sandbox ? { sandbox: done.sandbox } : {}),
      };
      return { toolUseId: done.toolUseId, isError: done.isError, ref: done.ref };
    };
    try {
      // Read-only calls cannot interfere with each other: run them together. Anything that
      // writes runs alone, in the order the model asked.
      if (calls.every((c) => classOf(c.name) === 'read')) return await Promise.all(calls.map(one));
      const results: ToolResultRef[] = [];
      for (const [i, call] of calls.entries()) results.push(await one(call, i));
      return results;
    } finally {
      progress.toolCalls!.push(...records.filter(Boolean));
    }
  }
}
