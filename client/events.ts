import { WorkflowNotFoundError, isGrpcServiceError } from '@temporalio/client';
import {
  RunAlreadyExistsError,
  RunNotFoundError,
  RunStillRunningError,
  ServerUnavailableError,
  UsageError,
} from '../common/errors';
import { LoopState } from '../common/search-attributes';
import { escapeLine, terminalJson } from '../common/terminal';
import type { LoopwrightClient } from './loopwright-client';

/** Letters, digits and `._:-/`, 1 to 200 characters: safe inside a workflow id and a URL. */
const EVENT_KEY = /^[A-Za-z0-9._:/-]{1,200}$/;

/** The part of LoopwrightClient that events use (tests inject a stand-in). */
export type EventClient = Pick<LoopwrightClient, 'run' | 'temporal' | 'config'>;

/** One event to deliver: the loop, its idempotency key and the loop input. */
export interface EventRequest {
  loop: string;
  key: string;
  input: unknown;
  /** Run again on purpose when the earlier run with this key has closed. */
  force?: boolean;
  /** Who delivered it, recorded in the run's trigger (`cli`, `webhook`, ...). */
  by?: string;
}

/** What a delivery did: started the run, or found the run this key already has. */
export interface EventDelivery {
  workflowId: string;
  duplicate: boolean;
  /** The run's state: its LoopState while running or once completed, else Temporal's status. */
  state: string;
}

/** The key checked: a UsageError names what is wrong with it. */
export function validateEventKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0)
    throw new UsageError('missing event key: give a key of letters, digits and ._:-/ (at most 200 characters)');
  if (key.length > 200) throw new UsageError(`event key is ${key.length} characters long: at most 200 are allowed`);
  if (!EVENT_KEY.test(key)) {
    // The key is quoted in the message: escaped, so a control character in it is shown, not run.
    const bad = [...new Set([...key].filter((c) => !/[A-Za-z0-9._:/-]/.test(c)))].map((c) => terminalJson(c)).join(' ');
    throw new UsageError(
      `event key "${escapeLine(key)}" has characters that are not allowed (${bad}): use letters, digits and ._:-/`,
    );
  }
  return key;
}

/** The workflow id of the run an event starts: `<loop>/<key>`, the same for every delivery. */
export function eventWorkflowId(loop: string, key: string): string {
  return `${loop}/${key}`;
}

/**
 * Starts the run for an event at most once per key: workflow id `<loop>/<key>`, conflict policy
 * FAIL and reuse policy REJECT_DUPLICATE, so a second delivery (while the first run runs or after
 * it closed) starts nothing and reports the existing run with `duplicate: true`. With `force`
 * the reuse policy is ALLOW_DUPLICATE: a closed run is followed by a new run with the same id,
 * a running one is refused (RunStillRunningError). The key is the run's LoopItemKey. Invalid
 * keys, loops and inputs are UsageErrors raised before anything reaches the server.
 */
export async function deliverEvent(client: EventClient, request: EventRequest): Promise<EventDelivery> {
  const key = validateEventKey(request.key);
  const workflowId = eventWorkflowId(request.loop, key);
  // Two tries: under --force the old run may close between the refused start and describe.
  for (let attempt = 1; ; attempt++) {
    try {
      await client.run(request.loop, request.input, {
        id: workflowId,
        itemKey: key,
        reuse: request.force === true,
        trigger: { kind: 'event', by: request.by },
      });
      return { workflowId, duplicate: false, state: 'running' };
    } catch (err) {
      if (isUnavailable(err)) throw new ServerUnavailableError(client.config.temporalAddress, { cause: err });
      if (!(err instanceof RunAlreadyExistsError)) throw err;
    }
    const existing = await runState(client, workflowId);
    if (!request.force) return { workflowId, duplicate: true, state: existing.state };
    if (existing.running) throw new RunStillRunningError(workflowId, existing.state);
    if (attempt >= 2)
      throw new UsageError(
        `run ${workflowId} could not be started again: another delivery may be starting it; try again`,
      );
  }
}

/** The state of the latest run with `workflowId` (LoopState while it runs or once it completed). */
export async function runState(
  client: Pick<EventClient, 'temporal' | 'config'>,
  workflowId: string,
): Promise<{ running: boolean; state: string }> {
  try {
    const description = await client.temporal.workflow.getHandle(workflowId).describe();
    const status = description.status.name;
    const loopState = description.typedSearchAttributes.get(LoopState);
    if (status === 'RUNNING') return { running: true, state: loopState ?? 'running' };
    return { running: false, state: status === 'COMPLETED' && loopState ? loopState : status.toLowerCase() };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new RunNotFoundError(workflowId);
    if (isUnavailable(err)) throw new ServerUnavailableError(client.config.temporalAddress, { cause: err });
    throw err;
  }
}

/** A gRPC UNAVAILABLE, raw or wrapped in the SDK's ServiceError (`cause`): Temporal is not answering. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof ServerUnavailableError) return false;
  const cause = err instanceof Error && isGrpcServiceError(err.cause) ? err.cause : err;
  return isGrpcServiceError(cause) && cause.code === 14;
}
