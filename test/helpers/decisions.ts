import type { RunRecord } from '../../common/run-record';
import type { TestStack } from './temporal';

/** Polls the run's status every 200 ms until `done` holds, and returns that status. */
export async function until(s: TestStack, workflowId: string, done: (r: RunRecord) => boolean): Promise<RunRecord> {
  for (;;) {
    const r = await s.client.status(workflowId);
    if (done(r)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** The reason a raw update was refused with (the failure's cause), or the applied entry. */
export async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (err) {
    return (err as { cause?: Error }).cause?.message ?? (err as Error).message;
  }
}
