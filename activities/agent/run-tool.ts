import { currentActivityContext } from '../activity-context';
import { gateTool, type ToolResultRef } from '../../common/agent';
import { capToolOutput, type ContentBlock } from '../../common/context';
import type { Autonomy } from '../../common/loop-spec';
import { executeTool, type createToolRegistry } from '../tools/registry';
import type { SandboxName } from '../../common/run-record';
import type { Sandbox } from '../sandbox/sandbox';
import type { BlobStore } from '../transcript/store';
import { storeText, type TranscriptNode } from '../transcript/transcript';
import type { ToolLedger } from '../tools/ledger';

export interface RunToolInput {
  workflowId: string;
  attempt: number;
  turn: number;
  /** The assistant message (transcript node) that holds the tool call; its input is read from there. */
  assistantHead: string;
  toolUseId: string;
  name: string;
  root: string;
  autonomy: Autonomy;
  /** The run's tools; anything else is refused. */
  available: string[];
  allowedCommands: string[];
  commandTimeoutMs: number;
  outputCapChars: number;
  /** What the loop declares for its commands' environment (`spec.sandbox.env`). */
  commandEnv?: Record<string, string>;
}

export interface RunToolResult extends ToolResultRef {
  preview: string;
  bytes: number;
  /** The sandbox that ran the call's command, when it ran one. */
  sandbox?: SandboxName;
}

/**
 * Runs one tool call inside the run's workspace. The worker checks the autonomy gate again
 * (the workflow already did): a call the level does not allow is refused here too, never run.
 * The input is read from the transcript (not passed through history); the full output is
 * stored, and the model gets it capped to `outputCapChars` with a reference to the rest.
 * Tool errors come back as `isError` results for the model, never as activity failures.
 * With a ledger, a call's outcome is kept by its idempotency key (`<workflow id>/<run id>/<activity
 * id>`, the same on every retry): a retry after the worker was lost once the call finished answers
 * with that outcome instead of running the tool again, and tools whose work must not happen twice
 * (edit_file) get the key too.
 */
export async function runTool(
  deps: { store: BlobStore; registry: ReturnType<typeof createToolRegistry>; sandbox?: Sandbox; ledger?: ToolLedger },
  input: RunToolInput,
): Promise<RunToolResult> {
  const node = await deps.store.get<TranscriptNode>(input.assistantHead);
  const blocks = Array.isArray(node.message.content) ? (node.message.content as ContentBlock[]) : [];
  const call = blocks.find((b) => b.type === 'tool_use' && b.id === input.toolUseId) as
    Extract<ContentBlock, { type: 'tool_use' }> | undefined;
  if (!call) throw new Error(`tool call ${input.toolUseId} is not in transcript node ${input.assistantHead}`);
  const denied = gateTool(
    input.autonomy,
    input.name,
    input.available.includes(input.name) ? deps.registry.classOf(input.name) : undefined,
    input.available,
  );
  let outcome: { content: string; isError: boolean };
  let sandbox: SandboxName | undefined;
  const ctx = currentActivityContext();
  const run = ctx?.info.workflowExecution;
  const key = run && deps.ledger ? `${run.workflowId}/${run.runId}/${ctx!.info.activityId}` : undefined;
  const done = key
    ? await deps.ledger!.get<{ outcome: typeof outcome; sandbox?: SandboxName }>(`${key}#outcome`)
    : undefined;
  if (done) ({ outcome, sandbox } = done);
  else if (denied) outcome = { content: `denied: ${denied}`, isError: true };
  else {
    outcome = await executeTool(deps.registry, input.name, call.input, {
      root: input.root,
      allowedCommands: input.allowedCommands,
      commandTimeoutMs: input.commandTimeoutMs,
      outputCapChars: Math.max(input.outputCapChars * 4, 100_000),
      sandbox: deps.sandbox,
      commandEnv: input.commandEnv,
      onCommand: (ran) => (sandbox = ran.sandbox),
      signal: ctx?.cancellationSignal,
      heartbeat: ctx ? () => ctx.heartbeat() : undefined,
      ...(key ? { idempotency: { key, ledger: deps.ledger! } } : {}),
    });
    if (key) await deps.ledger!.put(`${key}#outcome`, { outcome, ...(sandbox ? { sandbox } : {}) });
  }
  const fullRef = await storeText(deps.store, outcome.content);
  const forModel = capToolOutput(outcome.content, fullRef, input.outputCapChars);
  const ref = forModel === outcome.content ? fullRef : await storeText(deps.store, forModel);
  return {
    toolUseId: input.toolUseId,
    isError: outcome.isError,
    ref,
    preview: forModel.slice(0, 200),
    bytes: outcome.content.length,
    ...(sandbox ? { sandbox } : {}),
  };
}
