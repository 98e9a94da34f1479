import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

/** The parent Temporal names for a run (`workflowInfo().parent`). */
export interface ParentRun {
  workflowId: string;
  runId: string;
}

/**
 * Why a run whose input says it is an evaluation is refused, or null when its parent is an
 * improvement of this deployment: an `improveWorkflow` on the run's own task queue. Anyone who
 * can reach Temporal can run a worker of their own on another queue whose workflow starts a child
 * on this queue with `evaluation: true` (the child then has a parent, which a raw start has not);
 * an evaluation pins no trust and asks for no grant, so such a child would run at L3, its write
 * tools in the folder it names, with no operator's grant. Read from the parent itself (its type
 * and task queue), as publishRefusal reads an improvement.
 */
export async function evaluationParentRefusal(
  parent: ParentRun | undefined,
  client: Client = Context.current().client,
  taskQueue: string = Context.current().info.taskQueue,
): Promise<string | null> {
  const refused = (why: string) =>
    `refused: the run's input says it is an evaluation, which only an improvement's child runs are, but ${why}; start runs with the client (loopwright run)`;
  if (!parent) return refused('it has no parent run');
  try {
    const description = await client.workflow.getHandle(parent.workflowId, parent.runId).describe();
    if (description.type !== 'improveWorkflow')
      return refused(`its parent ${parent.workflowId} is not an improvement (it is a ${description.type})`);
    // Only this deployment's workers run its queue: a parent on another queue ran anyone's code.
    if (description.taskQueue !== taskQueue)
      return refused(
        `its parent ${parent.workflowId} is not an improvement of this deployment (it runs on task queue ${description.taskQueue}, not ${taskQueue})`,
      );
    return null;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return refused(`its parent ${parent.workflowId} cannot be found`);
    throw err;
  }
}

/** The run a run continued from (`workflowInfo().continuedFromExecutionRunId`, same workflow id), and the types it may be. */
export interface ContinuedFrom {
  workflowId: string;
  runId: string;
  types: string[];
}

/**
 * Why a run that says it continued as new is refused, or null when the run it continued from was
 * one of `types` on this run's own task queue. Temporal sets `continuedFromExecutionRunId`, but
 * any workflow may continue as new into another type on another queue: a workflow of anyone's, on
 * a queue of their own, under the id of the run to forge, continues as new into a Loopwright run
 * (or a harness store) on this deployment's queue with any carried state (a run's pinned trust,
 * grant and session; a store's versions). Only a run this deployment's workers ran carries state.
 */
export async function continuedFromRefusal(
  from: ContinuedFrom,
  client: Client = Context.current().client,
  taskQueue: string = Context.current().info.taskQueue,
): Promise<string | null> {
  try {
    const description = await client.workflow.getHandle(from.workflowId, from.runId).describe();
    if (!from.types.includes(description.type))
      return `the run it continued from (${from.runId}) is a ${description.type}, not a ${from.types.join(' or ')}`;
    if (description.taskQueue !== taskQueue)
      return `the run it continued from (${from.runId}) ran on task queue ${description.taskQueue}, not ${taskQueue}`;
    return null;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return `the run it continued from (${from.runId}) cannot be found`;
    throw err;
  }
}
