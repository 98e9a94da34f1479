import { Option } from 'commander';
import { escapeLine, terminalJson } from '../../common/terminal';
import type { ClientHandler, CommandDefinition } from '../cli-command';
import type { LoopwrightClient } from '../loopwright-client';
import {
  createSchedule,
  deleteSchedule,
  scheduleSpec,
  describeSchedule,
  listSchedules,
  OVERLAP_POLICIES,
  pauseSchedule,
  triggerSchedule,
  unpauseSchedule,
  type ScheduleDetails,
  type ScheduleView,
} from '../schedules';
import { parseInputArg } from './run';

/**
 * `schedule create|list|describe|pause|unpause|trigger|delete`: Loopwright runs on Temporal
 * Schedules. Every subcommand prints the schedule id first and takes `--json`. What a schedule
 * holds (its id, note, runs) is printed inert (common/terminal.ts).
 */
export const scheduleDefinition: CommandDefinition = (program, cli) => {
  const { io } = cli;
  const withClient = (fn: ClientHandler, before?: (...args: any[]) => unknown) =>
    cli.action(cli.withClient(fn, before));
  const schedule = program
    .command('schedule')
    .description('run a loop on a timer (Temporal Schedules): create, list, describe, pause, unpause, trigger, delete');
  schedule
    .command('create <loop>')
    .description('create a schedule that starts a run of the loop; the input is validated now')
    .option('--every <duration>', 'start a run every DURATION (e.g. 30m, 1h, 1d)')
    .option('--cron <expr>', 'start runs on a cron expression (UTC)')
    .option('--input <json>', 'the loop input: JSON, or @file')
    .option('--id <id>', 'schedule id (default <loop>-every-<duration> or <loop>-cron)')
    .addOption(
      new Option('--overlap <policy>', 'when a run is still going at the next time')
        .choices(Object.keys(OVERLAP_POLICIES))
        .default('skip'),
    )
    .option('--json', 'machine-readable output')
    .action(
      withClient(
        async (
          client,
          loop: string,
          opts: { every?: string; cron?: string; input?: string; id?: string; overlap?: string; json?: boolean },
        ) => {
          const details = await createSchedule(client, {
            loop,
            input: parseInputArg(opts.input),
            every: opts.every,
            cron: opts.cron,
            id: opts.id,
            overlap: opts.overlap,
          });
          if (opts.json) io.out(terminalJson(details, 2));
          else
            [
              details.scheduleId,
              `  created: ${details.spec.text}, runs start as ${details.workflowIdPrefix}-<time> on task queue ${details.taskQueue}`,
              ...nextLines(details),
            ].forEach((l) => io.out(escapeLine(l)));
          return 0;
        },
        (_loop: string, opts: { every?: string; cron?: string }) => scheduleSpec(opts.every, opts.cron),
      ),
    );
  schedule
    .command('list')
    .description("Loopwright's schedules in the namespace")
    .option('--json', 'machine-readable output')
    .action(
      withClient(async (client, opts: { json?: boolean }) => {
        const rows = await listSchedules(client);
        if (opts.json) io.out(terminalJson(rows, 2));
        else scheduleTable(rows).forEach((l) => io.out(l));
        return 0;
      }),
    );
  schedule
    .command('describe <id>')
    .description('spec, paused state, next run times and recent runs')
    .option('--json', 'machine-readable output')
    .action(
      withClient(async (client, id: string, opts: { json?: boolean }) => {
        const details = await describeSchedule(client, id);
        if (opts.json) io.out(terminalJson(details, 2));
        else describeLines(details).forEach((l) => io.out(l));
        return 0;
      }),
    );
  const simple = (
    name: string,
    about: string,
    run: (client: LoopwrightClient, id: string, note?: string) => Promise<[Record<string, unknown>, string]>,
    note = false,
  ) => {
    const cmd = schedule.command(`${name} <id>`).description(about).option('--json', 'machine-readable output');
    if (note) cmd.option('--note <text>', 'why (kept on the schedule)');
    cmd.action(
      withClient(async (client, id: string, opts: { note?: string; json?: boolean }) => {
        const [result, line] = await run(client, id, opts.note);
        io.out(opts.json ? terminalJson({ scheduleId: id, ...result }) : `${escapeLine(id)}\n  ${escapeLine(line)}`);
        return 0;
      }),
    );
  };
  simple(
    'pause',
    'stop starting runs until unpaused',
    async (c, id, n) => (await pauseSchedule(c, id, n), [{ paused: true }, 'paused']),
    true,
  );
  simple(
    'unpause',
    'start runs again on the spec',
    async (c, id, n) => (await unpauseSchedule(c, id, n), [{ paused: false }, 'unpaused']),
    true,
  );
  simple('trigger', 'start one run now and print its workflow id', async (c, id) => {
    const workflowId = await triggerSchedule(c, id);
    return [
      { workflowId },
      workflowId
        ? `started ${workflowId}`
        : 'triggered; the run has not shown in the schedule yet (see `loopwright schedule describe`)',
    ];
  });
  simple(
    'delete',
    'delete the schedule (the runs it started are kept)',
    async (c, id) => (await deleteSchedule(c, id), [{ deleted: true }, 'deleted']),
  );
};

function nextLines(d: ScheduleView): string[] {
  return d.nextRuns.length ? [`  next runs  ${d.nextRuns.slice(0, 3).join(', ')}`] : ['  next runs  none'];
}

/** The human form of `describe`, every line escaped (`escapeLine`). */
export function describeLines(d: ScheduleDetails): string[] {
  const lines = [
    d.scheduleId,
    `  loop       ${d.loop ?? '-'}`,
    `  spec       ${d.spec.text} (overlap ${d.overlap}, catchup ${Math.round(d.catchupWindowMs / 1000)}s)`,
    `  state      ${d.paused ? 'paused' : 'active'}${d.note ? ` (${d.note})` : ''}`,
    `  runs       ${d.workflowIdPrefix}-<time> on task queue ${d.taskQueue}; ${d.actionsTaken} started so far`,
    ...nextLines(d),
  ];
  if (d.recentRuns.length === 0) lines.push('  recent     none');
  else
    lines.push(
      '  recent',
      ...d.recentRuns.map((r) => `    ${r.takenAt.replace('T', ' ').slice(0, 19)}  ${r.workflowId}  ${r.state ?? '?'}`),
    );
  return lines.map(escapeLine);
}

function scheduleTable(rows: ScheduleView[]): string[] {
  if (rows.length === 0) return ['no schedules'];
  const header = ['ID', 'LOOP', 'SPEC', 'STATE', 'NEXT RUN'];
  const body = rows.map((r) =>
    [
      r.scheduleId,
      r.loop ?? '-',
      r.spec.text,
      r.paused ? 'paused' : 'active',
      r.nextRuns[0]?.replace('T', ' ').slice(0, 19) ?? '-',
    ].map(escapeLine),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  return [header, ...body].map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}
