import { executeChild, makeContinueAsNewFunc } from '@temporalio/workflow';

// An attacker's own workflows, for test/security/decisions-session11.test.ts: run by the attacker's
// worker on a task queue of its own, they reach the deployment's queue the ways Temporal allows.

/** Starts a Loopwright run on the deployment's queue as its child, with an input that says it is an improvement's evaluation. */
export async function evaluationParent(args: {
  taskQueue: string;
  workflowId: string;
  input: unknown;
}): Promise<unknown> {
  return executeChild('loopWorkflowV2', { taskQueue: args.taskQueue, workflowId: args.workflowId, args: [args.input] });
}

/** Continues as new, under its own workflow id, into `workflowType` on the deployment's queue, with the state it was given. */
export async function forgedContinuation(args: {
  taskQueue: string;
  workflowType: string;
  input: unknown;
}): Promise<never> {
  return makeContinueAsNewFunc({ workflowType: args.workflowType, taskQueue: args.taskQueue })(args.input);
}
