import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { AppliedDecision } from '../common/decision';
import type { Harness } from '../common/improve/types';
import { canonicalJson } from '../common/sshsig';
import { improveStateQuery } from '../workflows/messages';
import type { ImprovementRecord } from '../workflows/improve/improve-workflow';

/** What a `publish` to a loop's harness store claims. */
export interface PublishClaim {
  loop: string;
  harness: Harness;
  by: string;
  proposedBy?: string;
}

/**
 * Why a harness store refuses to publish `claim`, or null: a harness is published only as the
 * candidate of an improvement run of the same loop that a person approved (verified, where the
 * worker has allowed signers) and that has not published yet. Read from the improvement itself
 * (its type, its task queue: the store's own, and its state query), so a caller who can reach
 * Temporal cannot publish a harness of their own by sending the store's update.
 */
export async function publishRefusal(
  claim: PublishClaim,
  client: Client = Context.current().client,
  taskQueue: string = Context.current().info.taskQueue,
): Promise<string | null> {
  const id = claim.proposedBy;
  if (!id)
    return `a harness is published only by an approved improvement (loopwright improve ${claim.loop}, then approve it)`;
  let record: ImprovementRecord;
  try {
    const handle = client.workflow.getHandle(id);
    const description = await handle.describe();
    if (description.type !== 'improveWorkflow') return `${id} is not an improvement run (it is a ${description.type})`;
    // What it answers is only as good as the worker that runs it: anyone who can reach Temporal
    // can run a worker of their own on another queue, whose `improveWorkflow` answers any record.
    // Only an improvement on the store's own queue (this deployment's workers) is read.
    if (description.taskQueue !== taskQueue)
      return `${id} is not an improvement of this deployment: it runs on task queue ${description.taskQueue}, not ${taskQueue}`;
    record = await handle.query(improveStateQuery);
  } catch (err) {
    return `the improvement ${id} cannot be read: ${(err as Error).message.split('\n')[0]}`;
  }
  if (record.loop !== claim.loop) return `improvement ${id} is for loop ${record.loop}, not ${claim.loop}`;
  if (record.state !== 'awaiting_review' || record.published !== null)
    return `improvement ${id} is ${record.state}${record.published !== null ? ` (published v${record.published})` : ''}: it is not publishing an approved candidate now`;
  const approval = record.decisions.find((d): d is AppliedDecision => d.status === 'applied' && d.kind === 'approve');
  if (!approval) return `improvement ${id} has no approval`;
  if (record.trust?.allowedSigners && approval.verified !== true)
    return `improvement ${id} was approved by ${approval.by} unverified, and this worker verifies decisions`;
  if (approval.by !== claim.by) return `improvement ${id} was approved by ${approval.by}, not ${claim.by}`;
  if (canonicalJson(record.candidate) !== canonicalJson(claim.harness))
    return `the harness is not the candidate improvement ${id} was approved with`;
  return null;
}
