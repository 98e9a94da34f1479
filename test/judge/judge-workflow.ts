import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { JudgeInput } from '../../activities/checks/judge';
import type { Verdict } from '../../common/run-record';

const { judgeCandidate } = proxyActivities<Pick<Activities, 'judgeCandidate'>>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

/** A test workflow that runs one judge activity, so the judge of a change is tested on a real worker and dev server. */
export async function judgeOnceWorkflow(input: JudgeInput): Promise<Verdict> {
  return judgeCandidate(input);
}
