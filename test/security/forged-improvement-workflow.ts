import { condition, defineQuery, setHandler } from '@temporalio/workflow';

/**
 * An attacker's own `improveWorkflow`, for test/security/decisions-session9.test.ts: run by the
 * attacker's worker on a task queue of its own, it answers the `state` query with whatever record
 * it was started with (an approved improvement whose candidate is the attacker's harness).
 */
export async function improveWorkflow(forged: unknown): Promise<void> {
  setHandler(defineQuery<unknown>('state'), () => forged);
  await condition(() => false);
}
