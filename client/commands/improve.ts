import { Option } from 'commander';
import { UsageError } from '../../common/errors';
import { escapeBlock, escapeLine, terminalJson } from '../../common/terminal';
import { diffHarness, harnessPrompt } from '../../common/improve/proposal';
import type { HarnessVersion } from '../../common/improve/types';
import type { ImprovementRecord } from '../../workflows/improve/improve-workflow';
import type { HarnessMove } from '../../workflows/harness/harness-workflow';
import { byline } from '../../common/decision';
import { harnessState, rollbackHarness } from '../../harness/store';
import {
  improveInput,
  regressionFromRun,
  scheduleImprovement,
  startImprovement,
  waitImprovement,
  type ImproveOptions,
} from '../improve';
import type { ClientHandler, CommandDefinition } from '../cli-command';

/**
 * The improvement loop's commands: `improve`, `harness list|show|diff|rollback` and
 * `regression add|list`. See workflows/improve/improve-workflow.ts and workflows/harness/harness-workflow.ts.
 * What runs, proposals and people wrote is printed inert (common/terminal.ts).
 */
export const improveDefinition: CommandDefinition = (program, cli) => {
  const { io, env } = cli;
  const withClient = (fn: ClientHandler) => cli.action(cli.withClient(fn));
  program
    .command('improve <loop>')
    .description('mine repeated failures, propose a harness change, evaluate it on the regression set, wait for review')
    .option('--since <duration>', 'mine runs closed within this window', '7d')
    .option('--min-occurrences <k>', 'distinct runs a failure must occur in', '3')
    .option('--repeats <k>', 'runs of each regression task per harness', '3')
    .option('--held-out <share>', 'share of the regression set held out', '0.3')
    .option('--review-timeout <duration>', 'how long an accepted candidate waits for a review', '7d')
    .option(
      '--every <duration>',
      'instead of one run now, create the schedule improve-<task queue>-<loop> that runs it every DURATION',
    )
    .option('--wait', 'follow it until it ends or waits for review')
    .option('--json', 'machine-readable output')
    .action(
      withClient(
        async (client, loop: string, opts: ImproveOptions & { every?: string; wait?: boolean; json?: boolean }) => {
          const input = improveInput(client, loop, opts, env);
          if (opts.every) {
            const scheduleId = await scheduleImprovement(client, input, opts.every);
            io.out(
              opts.json
                ? JSON.stringify({ scheduleId })
                : `${scheduleId}\n  runs \`loopwright improve ${loop}\` every ${opts.every} (see \`loopwright schedule describe ${scheduleId}\`)`,
            );
            return 0;
          }
          const workflowId = await startImprovement(client, input);
          if (!opts.wait) {
            io.out(opts.json ? JSON.stringify({ workflowId }) : workflowId);
            return 0;
          }
          const record = await waitImprovement(client, workflowId);
          if (opts.json) io.out(terminalJson(record, 2));
          else improvementLines(record).forEach((l) => io.out(l));
          return 0;
        },
      ),
    );

  const harness = program
    .command('harness')
    .description("a loop's harness versions (its improvable prompt, knowledge and tool descriptions)");
  harness
    .command('list <loop>')
    .description('every version, the current one marked *')
    .option('--json', 'machine-readable output')
    .action(
      withClient(async (client, loop: string, opts: { json?: boolean }) => {
        const state = await harnessState(client.temporal, loop, client.config.taskQueue);
        if (opts.json)
          io.out(
            terminalJson(
              {
                current: state.current,
                versions: state.versions.map(({ harness: _h, ...v }) => v),
                moves: state.moves,
              },
              2,
            ),
          );
        else {
          state.versions.forEach((v) =>
            io.out(
              escapeLine(
                `${v.version === state.current ? '*' : ' '} v${v.version}  ${v.createdAt}  by ${v.by}  ${v.reason}${v.proposedBy ? `  (proposed by ${v.proposedBy})` : ''}`,
              ),
            ),
          );
          const rollbacks = state.moves.filter((m) => moveKind(m, state.versions) === 'rollback');
          if (rollbacks.length) io.out('rollbacks:');
          rollbacks.forEach((m) =>
            io.out(escapeLine(`  v${m.from} → v${m.to}  ${m.at}  by ${m.by}${byline(m)}  ${m.reason}`)),
          );
        }
        return 0;
      }),
    );
  harness
    .command('show <loop> [version]')
    .description('a version (default: the current one): the prompt the worker gets and the tool descriptions')
    .option('--json', 'the harness as JSON')
    .action(
      withClient(async (client, loop: string, version: string | undefined, opts: { json?: boolean }) => {
        const state = await harnessState(client.temporal, loop, client.config.taskQueue);
        const v = pick(state.versions, version ?? String(state.current), loop);
        if (opts.json) io.out(terminalJson(v, 2));
        else
          [
            escapeLine(
              `${loop} harness v${v.version}${v.version === state.current ? ' (current)' : ''}, by ${v.by}: ${v.reason}`,
            ),
            '',
            harnessPrompt(v.harness),
            ...Object.entries(v.harness.toolDescriptions).map(([t, d]) => `\ntool ${t}: ${d}`),
          ].forEach((l) => io.out(escapeBlock(l)));
        return 0;
      }),
    );
  harness
    .command('diff <loop> [from] [to]')
    .description('what changed between two versions (default: the one before the current, and the current)')
    .action(
      withClient(async (client, loop: string, from: string | undefined, to: string | undefined) => {
        const state = await harnessState(client.temporal, loop, client.config.taskQueue);
        const b = pick(state.versions, to ?? String(state.current), loop);
        const a = pick(state.versions, from ?? String(state.moves.at(-1)?.from ?? Math.max(1, b.version - 1)), loop);
        const lines = diffHarness(a.harness, b.harness);
        io.out(`${loop} harness v${a.version} → v${b.version}`);
        (lines.length ? lines : ['(no difference)']).forEach((l) => io.out(escapeBlock(l)));
        return 0;
      }),
    );
  harness
    .command('rollback <loop>')
    .description('make the version before the current one (or --to) current again; runs that start afterwards use it')
    .requiredOption('--by <name>', 'who decides: recorded, and verified when signed (LOOPWRIGHT_SIGNING_KEY)')
    .option('--to <version>', 'the version to go back to')
    .option('--reason <text>', 'why', 'rolled back')
    .action(
      withClient(async (client, loop: string, opts: { by: string; to?: string; reason: string }) => {
        const to = opts.to === undefined ? undefined : versionNumber(opts.to);
        const now = await rollbackHarness(
          client.temporal,
          client.config.taskQueue,
          {
            loop,
            to,
            by: opts.by,
            reason: opts.reason,
          },
          (message) => client.sign(message),
        );
        io.out(`${loop}: harness v${now} is current`);
        return 0;
      }),
    );

  const regression = program
    .command('regression')
    .description("a loop's regression set: the tasks an improvement is evaluated on");
  regression
    .command('add <loop>')
    .description('turn a real run into a regression task (its input, and what its run should do)')
    .requiredOption('--from-run <id>', 'the run')
    .addOption(new Option('--expect <outcome>', 'what a run of it should do').choices(['pass', 'fail']).default('pass'))
    .requiredOption('--by <name>', 'who adds it: recorded, and verified when signed (LOOPWRIGHT_SIGNING_KEY)')
    .action(
      withClient(async (client, loop: string, opts: { fromRun: string; expect: 'pass' | 'fail'; by: string }) => {
        const id = await regressionFromRun(client, { loop, runId: opts.fromRun, expect: opts.expect, by: opts.by });
        io.out(`${loop}: regression task ${id} from ${opts.fromRun} (expect ${opts.expect})`);
        return 0;
      }),
    );
  regression
    .command('list <loop>')
    .description('the regression set')
    .option('--json', 'machine-readable output')
    .action(
      withClient(async (client, loop: string, opts: { json?: boolean }) => {
        const { regression: tasks } = await harnessState(client.temporal, loop, client.config.taskQueue);
        if (opts.json) io.out(terminalJson(tasks, 2));
        else
          tasks.forEach((t) =>
            io.out(
              escapeLine(
                `${t.id}  expect ${t.expect}  from ${t.fromRun ?? '-'}  by ${t.by}${byline(t)}  ${JSON.stringify(t.input).slice(0, 80)}`,
              ),
            ),
          );
        return 0;
      }),
    );
};

/**
 * Whether a move published a version or rolled back: recorded since signed store requests; before,
 * a publish is the move that made its version (at the version's creation, by its author).
 */
function moveKind(m: HarnessMove, versions: HarnessVersion[]): 'publish' | 'rollback' {
  if (m.kind) return m.kind;
  const made = versions.find((v) => v.version === m.to);
  return made && m.to !== 1 && made.createdAt === m.at && made.by === m.by ? 'publish' : 'rollback';
}

function versionNumber(text: string): number {
  const n = Number(text.replace(/^v/, ''));
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`"${text}" is not a harness version: give e.g. 2 or v2`);
  return n;
}

function pick(versions: HarnessVersion[], text: string, loop: string): HarnessVersion {
  const n = versionNumber(text);
  const v = versions.find((x) => x.version === n);
  if (!v) throw new UsageError(`${loop} has no harness v${n}: it has v1 to v${versions.length}`);
  return v;
}

/** The improvement's outcome in a few lines, each escaped (`escapeLine`). */
export function improvementLines(r: ImprovementRecord): string[] {
  const lines = [r.workflowId, `  ${r.state}: ${r.reason}`];
  if (r.mined)
    lines.push(
      `  mined ${r.mined.considered} runs: ${r.mined.groups.length} repeated failure groups${r.group ? `; chose ${r.group.key} (${r.group.runs.length} runs)` : ''}`,
    );
  if (r.proposal) lines.push(`  proposal: ${r.changed.join(', ')}; root cause: ${r.proposal.contract.rootCause}`);
  if (r.refusal)
    lines.push(
      `  refused: ${r.refusal.outside.length ? `outside the surface: ${r.refusal.outside.join(', ')}` : r.refusal.reason}`,
    );
  const e = r.evaluation;
  if (e) {
    const arm = (name: string, a: typeof e.current) =>
      `  ${name.padEnd(9)} pass@${e.k} ${a.passAtK.toFixed(2)}  pass^${e.k} ${a.passHatK.toFixed(2)}  mean ${a.meanPassRate.toFixed(2)}  held-out pass^${e.k} ${a.heldOut.passHatK.toFixed(2)}  $${a.costUsd.toFixed(4)}`;
    lines.push(
      arm('current', e.current),
      arm('candidate', e.candidate),
      `  fixed: ${e.fixed.join(', ') || 'none'}; broken: ${e.broken.join(', ') || 'none'}`,
    );
  }
  if (r.state === 'awaiting_review')
    lines.push(
      `  approve: loopwright approve ${r.workflowId} --by <name>   reject: loopwright reject ${r.workflowId} --by <name> --reason <why>`,
    );
  return lines.map(escapeLine);
}
