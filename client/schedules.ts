import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  type ScheduleDescription,
  type ScheduleOverlapPolicy,
  type ScheduleSpec,
} from '@temporalio/client';
import { parseDuration } from '../common/duration';
import { ServerUnavailableError, UsageError } from '../common/errors';
import { escapeLine, requireOneLine } from '../common/terminal';
import { LOOP_RUN_TYPES, loopWorkflowV2 } from '../workflows/loop/loop-workflow';
import { runPresentation } from '../common/run-presentation';
import { isUnavailable, runState } from './events';
import type { LoopwrightClient } from './loopwright-client';

/** Overlap policies as the CLI spells them, and Temporal's names. */
export const OVERLAP_POLICIES = {
  skip: 'SKIP',
  'buffer-one': 'BUFFER_ONE',
  'allow-all': 'ALLOW_ALL',
} as const satisfies Record<string, ScheduleOverlapPolicy>;
export type OverlapName = keyof typeof OVERLAP_POLICIES;

/** What `schedule create` takes: the loop, its input, and exactly one of `every` / `cron`. */
export interface CreateScheduleRequest {
  loop: string;
  input: unknown;
  every?: string;
  cron?: string;
  id?: string;
  overlap?: string;
}

/** What Loopwright keeps in a schedule's memo, so `describe` shows the spec as it was given. */
interface ScheduleMemo {
  loop: string;
  every?: string;
  cron?: string;
}

/** A schedule as `list` and `describe` show it. */
export interface ScheduleView {
  scheduleId: string;
  loop: string | null;
  spec: { every?: string; cron?: string; text: string };
  overlap: string;
  paused: boolean;
  note: string | null;
  nextRuns: string[];
}

/** `describe`: the view plus where runs go and what the schedule started. */
export interface ScheduleDetails extends ScheduleView {
  taskQueue: string;
  /** Runs get this id plus a timestamp Temporal appends. */
  workflowIdPrefix: string;
  catchupWindowMs: number;
  actionsTaken: number;
  recentRuns: Array<{ workflowId: string; scheduledAt: string; takenAt: string; state: string | null }>;
}

/** How a new schedule's runs are spaced: `{ intervals }` for --every, `{ cronExpressions }` for --cron. */
export function scheduleSpec(
  every: string | undefined,
  cron: string | undefined,
): { spec: ScheduleSpec; memo: Omit<ScheduleMemo, 'loop'> } {
  if ((every === undefined) === (cron === undefined))
    throw new UsageError('give exactly one of --every DURATION (e.g. 1h) or --cron EXPR (e.g. "0 9 * * MON-FRI")');
  if (cron !== undefined) {
    if (cron.trim() === '') throw new UsageError('--cron is empty: give a cron expression such as "0 9 * * MON-FRI"');
    return { spec: { cronExpressions: [cron.trim()] }, memo: { cron: cron.trim() } };
  }
  const ms = parseDuration(every!);
  if (ms === undefined || ms < 1000)
    throw new UsageError(
      `--every "${every}" is not a duration of at least 1s: use a number and a unit (s, m, h, d), e.g. 30m or 1h`,
    );
  return { spec: { intervals: [{ every: ms }] }, memo: { every: every!.replace(/\s+/g, '') } };
}

/**
 * Creates a Temporal Schedule that starts `loopWorkflowV2` for `loop`. The input is validated
 * with the loop's schema now (InputError, exit 2) and the planned LoopInput is pinned in the
 * action (spec, models, prices), so every run of the schedule runs the same plan. Runs get the
 * workflow id `<loop>/scheduled-<timestamp>`, the search attributes and summary of a direct run,
 * overlap `skip` unless asked and a one-minute catchup window. Returns the schedule's details.
 * An id with a control character or a newline is a UsageError: it names every run it starts.
 */
export async function createSchedule(
  client: LoopwrightClient,
  request: CreateScheduleRequest,
): Promise<ScheduleDetails> {
  const { spec, memo } = scheduleSpec(request.every, request.cron);
  const overlapName = (request.overlap ?? 'skip') as OverlapName;
  if (!Object.hasOwn(OVERLAP_POLICIES, overlapName))
    throw new UsageError(
      `unknown overlap policy "${request.overlap}": use one of ${Object.keys(OVERLAP_POLICIES).join(', ')}`,
    );
  const scheduleId = request.id ?? (memo.every ? `${request.loop}-every-${memo.every}` : `${request.loop}-cron`);
  if (scheduleId.trim() === '' || scheduleId.length > 200)
    throw new UsageError(`schedule id "${escapeLine(scheduleId)}" must be 1 to 200 characters`);
  requireOneLine('schedule id', scheduleId);
  const plan = client.plan(request.loop, request.input, { kind: 'schedule', by: scheduleId });
  try {
    await client.temporal.schedule.create({
      scheduleId,
      spec,
      action: {
        type: 'startWorkflow',
        workflowType: loopWorkflowV2,
        args: [plan],
        taskQueue: client.config.taskQueue,
        workflowId: `${plan.loop}/scheduled`,
        ...runPresentation(plan, client.redaction),
      },
      policies: { overlap: OVERLAP_POLICIES[overlapName], catchupWindow: '1m' },
      memo: { loopwright: { loop: plan.loop, ...memo } satisfies ScheduleMemo },
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning)
      throw new UsageError(
        `a schedule with id ${scheduleId} already exists: choose another --id or delete it with \`loopwright schedule delete ${scheduleId}\``,
      );
    // The SDK turns the server's "Invalid schedule spec" into a TypeError.
    if (err instanceof TypeError && request.cron !== undefined)
      throw new UsageError(`--cron "${request.cron}" is not a valid cron expression: ${err.message}`);
    throw translate(err, client, scheduleId);
  }
  return describeSchedule(client, scheduleId);
}

/** Loopwright's schedules (those that start a loop run, of either type in `LOOP_RUN_TYPES`) in the namespace. Listing is eventually consistent. */
export async function listSchedules(client: LoopwrightClient): Promise<ScheduleView[]> {
  const rows: ScheduleView[] = [];
  try {
    for await (const s of client.temporal.schedule.list()) {
      if (!LOOP_RUN_TYPES.includes(s.action?.workflowType ?? '')) continue;
      const memo = readMemo(s.memo);
      rows.push({
        scheduleId: s.scheduleId,
        loop: memo?.loop ?? null,
        spec: specView(memo, s.spec?.intervals?.[0]?.every),
        overlap: '-',
        paused: s.state.paused,
        note: s.state.note ?? null,
        nextRuns: s.info.nextActionTimes.map((d) => d.toISOString()),
      });
    }
  } catch (err) {
    throw translate(err, client);
  }
  return rows.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}

/** The schedule's spec, paused state, next run times and recent runs with their states. */
export async function describeSchedule(client: LoopwrightClient, scheduleId: string): Promise<ScheduleDetails> {
  const d = await call(client, scheduleId, (h) => h.describe());
  const memo = readMemo(d.memo);
  const recent = await Promise.all(
    d.info.recentActions.map(async (a) => ({
      workflowId: a.action.workflow.workflowId,
      scheduledAt: a.scheduledAt.toISOString(),
      takenAt: a.takenAt.toISOString(),
      state: await runState(client, a.action.workflow.workflowId).then(
        (s) => s.state,
        () => null,
      ),
    })),
  );
  return {
    scheduleId,
    loop: memo?.loop ?? loopOfAction(d),
    spec: specView(memo, d.spec.intervals?.[0]?.every),
    overlap: overlapName(d.policies.overlap),
    paused: d.state.paused,
    note: d.state.note ?? null,
    nextRuns: d.info.nextActionTimes.map((t) => t.toISOString()),
    taskQueue: d.action.taskQueue,
    workflowIdPrefix: d.action.workflowId,
    catchupWindowMs: d.policies.catchupWindow,
    actionsTaken: d.info.numActionsTaken,
    recentRuns: recent,
  };
}

/** Pauses the schedule (no runs start until unpaused); the note is kept on the schedule. */
export async function pauseSchedule(client: LoopwrightClient, scheduleId: string, note?: string): Promise<void> {
  await call(client, scheduleId, (h) => h.pause(note ?? 'paused with loopwright schedule pause'));
}

export async function unpauseSchedule(client: LoopwrightClient, scheduleId: string, note?: string): Promise<void> {
  await call(client, scheduleId, (h) => h.unpause(note ?? 'unpaused with loopwright schedule unpause'));
}

/**
 * Starts one run now (even while another runs or the schedule is paused) and waits up to
 * `waitMs` for it to show in the schedule's recent actions. Returns its workflow id, or null
 * when it did not show in time.
 */
export async function triggerSchedule(
  client: LoopwrightClient,
  scheduleId: string,
  waitMs = 10_000,
): Promise<string | null> {
  const before = new Set(
    (await call(client, scheduleId, (h) => h.describe())).info.recentActions.map((a) => a.action.workflow.workflowId),
  );
  await call(client, scheduleId, (h) => h.trigger());
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const recent = (await call(client, scheduleId, (h) => h.describe())).info.recentActions;
    const started = recent.map((a) => a.action.workflow.workflowId).find((id) => !before.has(id));
    if (started) return started;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return null;
}

/** Deletes the schedule; runs it started are not touched. */
export async function deleteSchedule(client: LoopwrightClient, scheduleId: string): Promise<void> {
  await call(client, scheduleId, (h) => h.delete());
}

type Handle = ReturnType<LoopwrightClient['temporal']['schedule']['getHandle']>;

async function call<T>(client: LoopwrightClient, scheduleId: string, fn: (handle: Handle) => Promise<T>): Promise<T> {
  try {
    return await fn(client.temporal.schedule.getHandle(scheduleId));
  } catch (err) {
    throw translate(err, client, scheduleId);
  }
}

function translate(err: unknown, client: LoopwrightClient, scheduleId?: string): unknown {
  if (err instanceof ScheduleNotFoundError)
    return new UsageError(
      `no schedule with id ${scheduleId ?? err.scheduleId}: check the id with \`loopwright schedule list\``,
    );
  if (isUnavailable(err)) return new ServerUnavailableError(client.config.temporalAddress, { cause: err });
  return err;
}

function readMemo(memo: Record<string, unknown> | undefined): ScheduleMemo | undefined {
  const value = memo?.loopwright as Partial<ScheduleMemo> | undefined;
  return typeof value?.loop === 'string' ? (value as ScheduleMemo) : undefined;
}

function specView(memo: ScheduleMemo | undefined, intervalMs: number | undefined): ScheduleView['spec'] {
  if (memo?.every) return { every: memo.every, text: `every ${memo.every}` };
  if (memo?.cron) return { cron: memo.cron, text: `cron ${memo.cron}` };
  if (intervalMs !== undefined)
    return { every: `${Math.round(intervalMs / 1000)}s`, text: `every ${Math.round(intervalMs / 1000)}s` };
  return { text: 'calendar (see the Web UI)' };
}

function overlapName(policy: ScheduleOverlapPolicy): string {
  const entry = Object.entries(OVERLAP_POLICIES).find(([, value]) => value === policy);
  return entry
    ? entry[0]
    : String(policy ?? 'skip')
        .toLowerCase()
        .replace(/_/g, '-');
}

function loopOfAction(d: ScheduleDescription): string | null {
  const first = d.action.args?.[0] as { loop?: unknown } | undefined;
  return typeof first?.loop === 'string' ? first.loop : null;
}
