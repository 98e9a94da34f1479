import { improvementStatus } from '../improve';
import { terminalJson } from '../../common/terminal';
import type { LoopwrightClient } from '../loopwright-client';
import { summarize, type Output } from '../output';
import { improvementLines } from './improve';

/**
 * `status <id> [--json]`: the run record (or an improvement run's record), as a summary or as
 * JSON. Both are inert on a terminal: the summary is escaped (common/terminal.ts), the JSON is
 * exact JSON with C1 and bidi characters written as `\uXXXX`.
 */
export async function statusCommand(client: LoopwrightClient, id: string, opts: { json?: boolean }, io: Output): Promise<number> {
  if ((await client.workflowType(id)) === 'improveWorkflow') {
    const record = await improvementStatus(client, id);
    if (opts.json) io.out(terminalJson(record, 2));
    else improvementLines(record).forEach((l) => io.out(l));
    return 0;
  }
  const record = await client.status(id);
  if (opts.json) io.out(terminalJson(record, 2));
  else summarize(record).forEach((l) => io.out(l));
  return 0;
}
