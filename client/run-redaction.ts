import { decodeOptionalSingle } from '@temporalio/common/lib/internal-non-workflow';
import { defaultPayloadConverter } from '@temporalio/common';
import type { LoopInput } from '../common/loop-input';
import type { Redaction } from '../common/redact';
import type { LoopwrightClient } from './loopwright-client';

/**
 * What the client redacts in a run it prints (`status`, `review`, `run`): its own redaction (its
 * variables' values and LOOPWRIGHT_REDACT names) and the names the run pinned at start
 * (`LoopInput.redact`, read from the first event of its history through the client's codec).
 * A history the client cannot read (retention, a key not in its ring) leaves the client's own.
 */
export async function runRedaction(client: LoopwrightClient, workflowId: string): Promise<Redaction> {
  const own = client.redaction;
  try {
    const { history } = await client.temporal.workflowService.getWorkflowExecutionHistory({
      namespace: client.config.namespace,
      execution: { workflowId },
      maximumPageSize: 1,
    });
    const payload = history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    const decoded = await decodeOptionalSingle(client.temporal.options.loadedDataConverter.payloadCodecs, payload);
    const pinned = decoded ? (defaultPayloadConverter.fromPayload<LoopInput>(decoded).redact ?? []) : [];
    return pinned.length ? { names: [...(own.names ?? []), ...pinned], values: own.values } : own;
  } catch {
    return own;
  }
}
