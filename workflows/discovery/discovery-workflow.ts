import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { forDisplay } from '../../common/redact';
import { runPresentation } from '../../common/run-presentation';
import type { Activities } from '../../activities';
import type { DiscoveredItem, DiscoveryInput, DiscoveryResult } from '../../common/discovery';
import { CHECK_CALL, TOOL_CALL } from '../activity-proxies';
import { loopWorkflow, loopWorkflowV2 } from '../loop/loop-workflow';
import { discoveryStateQuery } from '../messages';
import { FailureType } from '../../common/failure-types';

const { listFailingTests } = proxyActivities<Activities>({
  ...CHECK_CALL,
  retry: { ...CHECK_CALL.retry, nonRetryableErrorTypes: [FailureType.Discovery] },
});
const { planTriageRun, describeRun, countPendingReviews } = proxyActivities<Activities>({
  ...TOOL_CALL,
  retry: { ...TOOL_CALL.retry, nonRetryableErrorTypes: [FailureType.Input, FailureType.Usage] },
});

/** Child starts in flight at once, unless the input says otherwise. */
export const DEFAULT_FAN_OUT = 4;

/** The last segment of a path, without Node's `path` (workflow code). */
function basename(p: string): string {
  const parts = p.replace(/[\\/]+$/, '').split(/[\\/]/);
  return parts[parts.length - 1] || 'repo';
}

/** The deterministic workflow id of the run for one item: `<loop>/<repo basename>/<key>`. */
export function itemWorkflowId(loop: string, repo: string, key: string): string {
  return `${loop}/${basename(repo)}/${key}`;
}

/**
 * Discovery for a repository's failing tests: runs the test command once (an activity, up to
 * 30 minutes), then starts one `loopWorkflowV2` run per failing test with the id
 * `<loop>/<repo basename>/<key>`, at most `fanOut` starts in flight at a time. Ids are never
 * reused (REJECT_DUPLICATE): an item whose run is running or has ended is skipped with the
 * reason, so the same failure is never worked twice. The runs are abandoned, not awaited: they
 * outlive the discovery, which ends once every item is started or skipped.
 */
export async function discoveryWorkflow(input: DiscoveryInput): Promise<DiscoveryResult> {
  const state: DiscoveryResult = { phase: 'listing', items: [], started: [], skipped: [] };
  setHandler(discoveryStateQuery, () => state);
  state.items = await listFailingTests({ repo: input.repo, testCommand: input.testCommand });
  state.phase = 'starting';
  const queue = [...state.items];
  const lane = async (): Promise<void> => {
    for (let item = queue.shift(); item; item = queue.shift()) await startOne(item);
  };
  await Promise.all(Array.from({ length: Math.max(1, input.fanOut ?? DEFAULT_FAN_OUT) }, lane));
  // Lanes finish in any order; report in the order the items were found.
  const order = (id: string) => state.items.findIndex((i) => itemWorkflowId(input.loop, input.repo, i.key) === id);
  state.started.sort((a, b) => order(a) - order(b));
  state.skipped.sort((a, b) => order(a.workflowId) - order(b.workflowId));
  state.phase = 'done';
  return state;

  async function startOne(item: DiscoveredItem): Promise<void> {
    const workflowId = itemWorkflowId(input.loop, input.repo, item.key);
    const plan = await planTriageRun({
      loop: input.loop,
      repo: input.repo,
      testCommand: input.testCommand,
      failingTest: item.name,
      reportDir: input.reportDir,
      maxPendingReviews: input.maxPendingReviews,
      by: workflowInfo().workflowId,
    });
    // Verification debt: while too many of the loop's runs wait for a human, start nothing new.
    const max = plan.spec.maxPendingReviews;
    if (max !== undefined && (await describeRun({ workflowId })) === 'unknown') {
      const waiting = await countPendingReviews({ loop: plan.loop });
      if (waiting >= max) {
        state.skipped.push({
          key: item.key,
          workflowId,
          reason: `verification debt: ${waiting} runs of ${plan.loop} wait for a human (maxPendingReviews ${max})`,
        });
        return;
      }
    }
    try {
      // New runs are loopWorkflowV2 (fewer commands per run), started with the search attributes
      // a client gives (so the run's first upsert is its first state change); a discovery that
      // started runs before it replays starting loopWorkflow.
      const run = { ...plan, itemKey: item.key };
      const v2 = patched('loop-v2');
      await startChild(v2 ? loopWorkflowV2 : loopWorkflow, {
        workflowId,
        args: [run],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        staticSummary: forDisplay(`${plan.loop}: ${item.name}`, { names: plan.redact ?? [] }).slice(0, 200),
        ...(v2 ? { typedSearchAttributes: runPresentation(run).typedSearchAttributes } : {}),
      });
      state.started.push(workflowId);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const status = await describeRun({ workflowId }).catch((e: unknown) => {
        if (e instanceof ActivityFailure) return 'unknown' as const;
        throw e;
      });
      state.skipped.push({
        key: item.key,
        workflowId,
        reason: status === 'running' ? 'already running' : 'already done',
      });
    }
  }
}
