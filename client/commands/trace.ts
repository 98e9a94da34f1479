import { isImprovement } from '../improve';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { renderTraceMarkdown } from '../../trace/render-markdown';
import { UsageError } from '../../common/errors';
import { terminalJson } from '../../common/terminal';
import { buildTrace } from '../../trace/build-trace';
import { fetchHistories } from '../../trace/fetch-histories';
import { renderTrace } from '../../trace/render-trace';

/**
 * `trace <id> [--json | --markdown]`: the run's story rebuilt from its Temporal history (all runs of its
 * continue-as-new chain), so it works on running runs, ended ones and with no worker up.
 * Text is a timeline; `--json` prints the `Trace` (trace/types.ts); `--markdown` the report
 * `delivery.trace` writes (render-markdown.ts). Secrets are redacted; every format is inert on a
 * terminal (common/terminal.ts).
 * An unknown id is a RunNotFoundError (exit 2).
 */
export async function traceCommand(
  client: LoopwrightClient,
  id: string,
  opts: { json?: boolean; markdown?: boolean },
  io: Output,
): Promise<number> {
  if (opts.json && opts.markdown)
    throw new UsageError('--json and --markdown are two formats of the same trace: give one');
  if (await isImprovement(client, id)) {
    throw new UsageError(
      `${id} is an improvement run, not a loop run: see \`loopwright status ${id}\`; each of its evaluation runs (${id}/eval/...) has a trace`,
    );
  }
  const trace = buildTrace(await fetchHistories(client.temporal, id), { redaction: client.redaction });
  if (opts.json) io.out(terminalJson(trace, 2));
  else if (opts.markdown) io.out(renderTraceMarkdown(trace).trimEnd());
  else renderTrace(trace).forEach((line) => io.out(line));
  return 0;
}

/** `trace <id> [--json | --markdown]`. */
export const traceDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('trace <id>')
    .description("a run's story from its Temporal history: attempts, calls, verdicts, decisions, effects")
    .option('--json', 'the trace as JSON')
    .option('--markdown', 'the trace as a Markdown report (what delivery.trace writes)')
    .action(
      action(
        withClient(
          (client, id: string, opts) => traceCommand(client, id, opts, io),
          (_id: string, opts) => {
            if (opts.json && opts.markdown)
              throw new UsageError('--json and --markdown are two formats of the same trace: give one');
          },
        ),
      ),
    );
};
