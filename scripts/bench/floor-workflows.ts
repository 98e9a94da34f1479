/**
 * The floor the throughput bench measures Loopwright against: the same loop as `evaluate-optimize`
 * (worker, judge; the judge's failure feeds the next attempt) written as the smallest Temporal
 * workflow that can do it: no record, no budget, no search attributes, no checks beyond the judge,
 * no decisions. Whatever this costs on the dev server is Temporal's own price for a durable loop
 * of 4 activities, not Loopwright's.
 */
import { condition, defineUpdate, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { FeedbackEntry } from '../../common/prompts';
import type { FloorActivities } from './floor-activities';

// Retried as Temporal's users would (a model endpoint refuses a connection now and then under load);
// Loopwright retries its model calls in the workflow instead (workflows/loop/model-call.ts).
const { floorWorker, floorJudge, floorSetup } = proxyActivities<FloorActivities>({
  startToCloseTimeout: '1m',
  retry: { maximumAttempts: 5, initialInterval: '1s' },
});

/**
 * What `npm run bench -- --attribute` adds to the floor, one at a time, to price each of
 * Loopwright's own costs on the server: a search-attribute upsert at each state change (as
 * Loopwright's runs show their state), a heartbeat as each model call starts, and one more short
 * activity before the loop (as Loopwright loads the trust record).
 */
export interface FloorExtras {
  upserts?: boolean;
  heartbeats?: boolean;
  setupActivity?: boolean;
}

/** The bare loop: up to `maxAttempts` worker + judge calls; returns whether and when the judge passed. */
export async function floorLoop(
  task: string,
  rubric: string[],
  maxAttempts: number,
  extras: FloorExtras = {},
): Promise<{ passed: boolean; attempts: number }> {
  const show = (state: string) => {
    if (extras.upserts) upsertSearchAttributes({ LoopState: [state] });
  };
  show('running');
  if (extras.setupActivity) await floorSetup();
  const feedback: FeedbackEntry[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    show('running');
    const answer = await floorWorker(task, attempt, feedback, Boolean(extras.heartbeats));
    show('verifying');
    const verdict = await floorJudge(task, rubric, attempt, answer, Boolean(extras.heartbeats));
    if (verdict.passed) {
      show('completed');
      return { passed: true, attempts: attempt };
    }
    feedback.push(verdict.feedback);
  }
  return { passed: false, attempts: maxAttempts };
}

/** The bare human decision: an Update whose result confirms it. */
export const floorApprove = defineUpdate<'applied', [string]>('approve');

/** The bare parked run: one worker call (the draft), then wait for an approval, then close. */
export async function floorParked(task: string): Promise<{ draft: string; approvedBy: string }> {
  let approvedBy: string | undefined;
  setHandler(floorApprove, (by) => {
    approvedBy = by;
    return 'applied';
  });
  const draft = await floorWorker(task, 1, [], false);
  await condition(() => approvedBy !== undefined);
  return { draft, approvedBy: approvedBy! };
}
