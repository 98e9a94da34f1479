import { UsageError } from '../../common/errors';
import { escapeLine, terminalJson } from '../../common/terminal';
import { parseDuration } from '../../common/duration';
import { AutonomySchema, type Autonomy } from '../../common/loop-spec';
import { describeRule, OUTCOMES, promotionEvidence, type PromotionRule } from '../../common/promotion';
import type { RunRecord } from '../../common/run-record';
import { BUILT_IN_LOOPS } from '../../loops';
import type { LoopwrightClient } from '../loopwright-client';
import type { CommandDefinition } from '../cli-command';
import type { Output } from '../output';
import { allOf, clause, oneOf } from '../../common/visibility-query';
import { LOOP_RUN_TYPES } from '../../workflows/loop/loop-workflow';

/**
 * Runs read at most. Each one costs a visibility page entry and a `result()` call, so the
 * evidence stops at the newest 1000 closed runs (the list is newest first); a rule asking for
 * more consecutive runs than that cannot be judged here, and the output says the cap was hit.
 */
export const MAX_RUNS = 1000;
/** `result()` calls in flight at once. */
const CONCURRENCY = 8;

export interface AutonomyOptions {
  json?: boolean;
  /** The level whose runs count (L1, L2, L3); default the level of the loop's spec. */
  level?: string;
  /** Only runs that started within this duration (`7d`, `12h`). */
  since?: string;
  /** Only runs on this task queue (tests use it to see their own runs only). */
  taskQueue?: string;
}

/** A loop's promotion evidence at one level (default: its spec's), from its closed runs (see common/promotion.ts). */
export async function loopEvidence(client: LoopwrightClient, loop: string, opts: AutonomyOptions) {
  if (!BUILT_IN_LOOPS.has(loop))
    throw new UsageError(`unknown loop "${loop}": known loops are ${[...BUILT_IN_LOOPS.keys()].join(', ')}`);
  const asked = parseLevel(opts.level);
  const spec = client.plan(loop, BUILT_IN_LOOPS.get(loop)!.example, { kind: 'client' }).spec;
  // `promotion` joins the loop spec later: read it defensively.
  const rule = (spec as { promotion?: PromotionRule }).promotion;
  const level = asked ?? spec.autonomy;

  const clauses = [
    oneOf('WorkflowType', LOOP_RUN_TYPES),
    clause('LoopName', loop),
    clause('LoopAutonomy', level),
    clause('ExecutionStatus', 'Running', '!='),
  ];
  if (opts.since !== undefined) {
    const ms = parseDuration(opts.since);
    if (ms === undefined) throw new UsageError(`--since takes a duration like 7d, 12h or 30m, not "${opts.since}"`);
    clauses.push(clause('StartTime', new Date(Date.now() - ms).toISOString(), '>'));
  }
  if (opts.taskQueue) clauses.push(clause('TaskQueue', opts.taskQueue));

  const completed: Array<{ workflowId: string; runId: string }> = [];
  const skipped: Record<string, number> = {};
  let capped = false;
  for await (const wf of client.temporal.workflow.list({ query: allOf(...clauses) })) {
    // A continued-as-new execution is one link of a run whose last link is listed on its own.
    if (wf.status.name === 'CONTINUED_AS_NEW') continue;
    if (completed.length + Object.values(skipped).reduce((a, b) => a + b, 0) >= MAX_RUNS) {
      capped = true;
      break;
    }
    if (wf.status.name === 'COMPLETED') completed.push({ workflowId: wf.workflowId, runId: wf.runId });
    else skipped[wf.status.name.toLowerCase()] = (skipped[wf.status.name.toLowerCase()] ?? 0) + 1;
  }
  const records = await readRecords(client, completed);
  const evidence = promotionEvidence(records, level, rule);

  return { level, rule, evidence, skipped, capped };
}

/**
 * `autonomy <loop> [--level L] [--since D] [--json]`: from the loop's closed runs at one level,
 * how many passed, were approved unchanged, overridden, rejected or audited, the current streak,
 * and whether the loop meets its declared promotion rule. It never changes a level (an
 * operator grants one with `loopwright grant`).
 */
export async function autonomyCommand(
  client: LoopwrightClient,
  loop: string,
  opts: AutonomyOptions,
  io: Output,
): Promise<number> {
  const { level, rule, evidence, skipped, capped } = await loopEvidence(client, loop, opts);
  if (opts.json) {
    io.out(terminalJson({ loop, ...evidence, skipped, capped }, 2));
    return 0;
  }
  io.out(
    `${loop} at ${level}: ${evidence.runs} closed run${evidence.runs === 1 ? '' : 's'}${opts.since ? ` started in the last ${opts.since}` : ''}`,
  );
  const width = Math.max(...OUTCOMES.map((o) => o.length), 'streak'.length);
  for (const o of OUTCOMES) io.out(`  ${o.padEnd(width)}  ${evidence.counts[o]}`);
  io.out(`  ${'streak'.padEnd(width)}  ${rule ? evidence.streak : '-'}`);
  const noRecord = Object.entries(skipped).map(([status, n]) => `${n} ${status}`);
  if (noRecord.length) io.out(`  not counted: ${noRecord.join(', ')} (no run record)`);
  if (capped) io.out(`  only the newest ${MAX_RUNS} runs were read`);
  io.out(rule ? `rule: ${describeRule(rule, level)}, then ${rule.to}` : 'rule: none');
  // The verdict names the run that broke the streak: its id is the run's data.
  io.out(escapeLine(evidence.verdict));
  return 0;
}

function parseLevel(text: string | undefined): Autonomy | undefined {
  if (text === undefined) return undefined;
  const parsed = AutonomySchema.safeParse(text.toUpperCase());
  if (!parsed.success) throw new UsageError(`--level must be L1, L2 or L3, not "${text}"`);
  return parsed.data;
}

/** The records of completed runs, CONCURRENCY `result()` calls at a time. */
async function readRecords(
  client: LoopwrightClient,
  runs: Array<{ workflowId: string; runId: string }>,
): Promise<RunRecord[]> {
  const records: RunRecord[] = [];
  for (let i = 0; i < runs.length; i += CONCURRENCY) {
    const batch = runs.slice(i, i + CONCURRENCY);
    records.push(
      ...(await Promise.all(
        batch.map((r) => client.temporal.workflow.getHandle(r.workflowId, r.runId).result() as Promise<RunRecord>),
      )),
    );
  }
  return records;
}

/** `autonomy <loop> [--level L1|L2|L3] [--since DURATION] [--json]`. */
export const autonomyDefinition: CommandDefinition = (program, { action, withClient, io }) => {
  program
    .command('autonomy <loop>')
    .description(
      "evidence for raising a loop's autonomy: its closed runs at one level, the current streak, and whether it meets its promotion rule (never changes the level)",
    )
    .option('--level <level>', "count runs at this level (L1, L2, L3); default: the level of the loop's spec")
    .option('--since <duration>', 'only runs that started within this duration, e.g. 30d')
    .option('--json', 'print the evidence as JSON')
    .action(
      action(
        withClient((client, loop: string, opts) =>
          autonomyCommand(client, loop, { ...opts, taskQueue: client.config.taskQueue }, io),
        ),
      ),
    );
};
