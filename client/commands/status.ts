import { improvementStatus } from '../improve';
import type { LoopwrightClient } from '../loopwright-client';
import { summarize, type Output } from '../output';
import { improvementLines } from './improve';

/** `status <id> [--json]`: the run record (or an improvement run's record), as a summary or as JSON. */
export async function statusCommand(client: LoopwrightClient, id: string, opts: { json?: boolean }, io: Output): Promise<number> {
  if ((await client.workflowType(id)) === 'improveWorkflow') {
    const record = await improvementStatus(client, id);
    if (opts.json) io.out(JSON.stringify(record, null, 2));
    else improvementLines(record).forEach((l) => io.out(l));
    return 0;
  }
  const record = await client.status(id);
  if (opts.json) io.out(JSON.stringify(record, null, 2));
  else summarize(record).forEach((l) => io.out(l));
  return 0;
}
