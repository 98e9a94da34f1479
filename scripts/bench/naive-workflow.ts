import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ContentBlock, ToolResultBlock, ToolUseBlock, TranscriptMessage } from '../../common/context';
import type { NaiveActivities } from './naive-activities';

/** Input of {@link naiveSessionWorkflow}. */
export interface NaiveSessionInput {
  task: string;
  systemPrompt: string;
  model: string;
  toolNames: string[];
  /** Workspace folder the tools run in. */
  root: string;
  maxTurns: number;
}

/** Result of {@link naiveSessionWorkflow}: kept small, so only the session is measured. */
export interface NaiveSessionResult {
  turns: number;
  text: string;
  /** Characters of tool output each turn added to the conversation (index 0 = turn 1). */
  newContent: number[];
}

const { naiveTurn, naiveTool } = proxyActivities<NaiveActivities>({
  startToCloseTimeout: '1m',
  retry: { maximumAttempts: 1 },
});

/**
 * The baseline Loopwright avoids: the workflow keeps the whole message array and passes it
 * to `naiveTurn` every turn, and appends each tool's full output to it. Every turn's
 * activity input therefore holds every earlier tool result, and history grows quadratically.
 * Ends when the model answers without a tool call, or after `maxTurns` turns.
 */
export async function naiveSessionWorkflow(input: NaiveSessionInput): Promise<NaiveSessionResult> {
  const { workflowId } = workflowInfo();
  const messages: TranscriptMessage[] = [{ role: 'user', content: input.task }];
  const newContent: number[] = [];
  for (let turn = 1; turn <= input.maxTurns; turn++) {
    const reply = await naiveTurn({
      workflowId,
      turn,
      model: input.model,
      systemPrompt: input.systemPrompt,
      toolNames: input.toolNames,
      messages,
    });
    messages.push(reply);
    const blocks: ContentBlock[] = Array.isArray(reply.content)
      ? reply.content
      : [{ type: 'text', text: reply.content }];
    const calls = blocks.filter((b): b is ToolUseBlock => b.type === 'tool_use');
    if (calls.length === 0) {
      const text = blocks.map((b) => (b.type === 'text' ? b.text : '')).join('');
      return { turns: turn, text, newContent };
    }
    const results: ToolResultBlock[] = [];
    for (const call of calls) {
      const out = await naiveTool({ root: input.root, name: call.name, input: call.input });
      results.push({
        type: 'tool_result',
        tool_use_id: call.id,
        content: out.content,
        ...(out.isError ? { is_error: true } : {}),
      });
    }
    newContent.push(results.reduce((sum, r) => sum + r.content.length, 0));
    messages.push({ role: 'user', content: results });
  }
  return { turns: input.maxTurns, text: '', newContent };
}
