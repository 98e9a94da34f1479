import type { LoopwrightClient } from '../loopwright-client';
import type { Output } from '../output';
import { buildTrace } from '../trace/build-trace';
import { fetchHistories } from '../trace/fetch-histories';
import { renderTrace } from '../trace/render-trace';

/**
 * `trace <id> [--json]`: the run's story rebuilt from its Temporal history (all runs of its
 * continue-as-new chain), so it works on running runs, ended ones and with no worker up.
 * Text is a timeline; `--json` prints the `Trace` (client/trace/types.ts). Secrets are redacted.
 * An unknown id is a RunNotFoundError (exit 2).
 */
export async function traceCommand(client: LoopwrightClient, id: string, opts: { json?: boolean }, io: Output): Promise<number> {
  const trace = buildTrace(await fetchHistories(client.temporal, id));
  if (opts.json) io.out(JSON.stringify(trace, null, 2));
  else renderTrace(trace).forEach((line) => io.out(line));
  return 0;
}
