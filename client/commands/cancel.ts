import type { LoopwrightClient } from '../loopwright-client';
import { terminalJson } from '../../common/terminal';
import { summarize, type Output } from '../output';

/** `cancel <id> [--json]`: the run ends `canceled` with its record. */
export async function cancelCommand(
  client: LoopwrightClient,
  id: string,
  opts: { json?: boolean },
  io: Output,
): Promise<number> {
  const record = await client.cancel(id);
  if (opts.json) io.out(terminalJson(record, 2));
  else summarize(record).forEach((l) => io.out(l));
  return 0;
}
