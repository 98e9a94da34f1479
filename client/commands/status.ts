import type { LoopwrightClient } from '../loopwright-client';
import { summarize, type Output } from '../output';

/** `status <id> [--json]`: the run record, as a summary or as JSON. */
export async function statusCommand(client: LoopwrightClient, id: string, opts: { json?: boolean }, io: Output): Promise<number> {
  const record = await client.status(id);
  if (opts.json) io.out(JSON.stringify(record, null, 2));
  else summarize(record).forEach((l) => io.out(l));
  return 0;
}
