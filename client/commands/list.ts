import type { LoopwrightClient } from '../loopwright-client';
import { runTable, type Output } from '../output';

/** `list [--state S] [--loop L] [--limit N] [--json]`, through the search attributes. */
export async function listCommand(client: LoopwrightClient, opts: { state?: string; loop?: string; limit?: string; json?: boolean }, io: Output): Promise<number> {
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  const rows = await client.list({ state: opts.state, loop: opts.loop, limit });
  if (opts.json) io.out(JSON.stringify(rows, null, 2));
  else runTable(rows).forEach((l) => io.out(l));
  return 0;
}
