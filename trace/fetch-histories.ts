import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { RunNotFoundError } from '../common/errors';
import { decodeHistory } from '../crypto/decode-history';
import type { History } from './history';

/** A chain longer than this is cut (oldest runs dropped) rather than fetched forever. */
const MAX_RUNS = 1000;

/**
 * The histories of a run's continue-as-new chain, oldest first: the latest run of the id,
 * then each run it continued from (the start event names the run before it). Following the
 * chain (rather than listing by id) needs no visibility store, and leaves out earlier, closed
 * runs that reused the same id. Payloads are decoded with the client's codecs (encrypted runs
 * read as they ran; a missing key is a KeyMissingError). An unknown id is a RunNotFoundError; runs of the chain already
 * past the namespace's retention are left out.
 */
export async function fetchHistories(client: Client, workflowId: string): Promise<History[]> {
  const chain: History[] = [];
  let runId: string | undefined;
  do {
    let history: History;
    try {
      history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError || isNotFound(err))) throw err;
      if (chain.length === 0) throw new RunNotFoundError(workflowId);
      break; // older runs of the chain are past the namespace's retention
    }
    // Payloads as the run saw them: the client's codec decrypts them (a key not in the ring throws).
    chain.unshift(await decodeHistory(history, client.options.loadedDataConverter.payloadCodecs));
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  } while (runId && chain.length < MAX_RUNS);
  return chain;
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: number } | null)?.code === 5;
}
