import { isCancellation } from '@temporalio/workflow';
import type { SessionSetup } from '../../common/agent';
import type { EffectSpec } from '../../common/loop-spec';
import { forDisplay } from '../../common/redact';
import type { RunRecord } from '../../common/run-record';
import { acts, TOOL_CALL } from '../activity-proxies';
import { describeStop, effectStop } from '../../common/budget';
import type { LoopRun } from './loop-run';
import { activityErrorMessage } from './record-keeping';

/**
 * Delivers a verified candidate. Reports (the L1 delivery) are written at every level, at once.
 * git_commit effects never run at L1; at L2 the run waits for a human's approval first; at L3
 * it applies them at once and marks the run for audit. Each effect carries the key
 * `<workflow id>/<effect>/<n>` so retries and repeated approvals apply it once, and counts
 * against maxSideEffects.
 */
export async function deliver(
  run: LoopRun,
  candidate: string,
  n: number,
  session: SessionSetup | undefined,
): Promise<RunRecord> {
  const { input, record, workflowId } = run;
  // An evaluation's child run is judged by its checks alone: nothing leaves it.
  if (input.evaluation) return run.finish('completed', 'passed', candidate);
  // Histories recorded before specs had `delivery` replay with none.
  const keyed = (input.spec.delivery?.effects ?? []).map((effect, i) => ({
    effect,
    key: `${workflowId}/${effect.name}/${i + 1}`,
  }));
  const reports = keyed.flatMap(({ effect, key }) => (effect.kind === 'report' ? [{ effect, key }] : []));
  const commits = keyed.flatMap(({ effect, key }) => (effect.kind === 'git_commit' ? [{ effect, key }] : []));
  // Runs without reports issue exactly the commands they always did (replayed histories depend on it).
  if (reports.length) {
    run.transition('applying');
    const failed = await applyReports(run, reports, candidate);
    if (failed) return failed;
  }
  if (commits.length === 0 || input.spec.autonomy === 'L1') return run.finish('completed', 'passed', candidate);
  if (!session?.branch) {
    record.error =
      'a git_commit effect needs the run to work on its own branch (an L2 run with tools and a git workspace)';
    return run.finish('blocked', 'setup_error');
  }
  let approvedBy: string | null = null;
  if (input.spec.autonomy === 'L2') {
    const plan = commits
      .map(({ effect: e }) => `${e.name} (${e.kind}${e.targetBranch ? ` to ${e.targetBranch}` : ''})`)
      .join(', ');
    const decision = await run.escalate(
      'approval',
      'approval_timeout',
      `attempt ${n} passed every check: approve to apply ${plan}`,
    );
    if (!decision) return run.finish('blocked', 'approval_timeout');
    if (decision.kind === 'reject') return run.finish('rejected', 'rejected', candidate);
    approvedBy = decision.by;
  }
  run.transition('applying');
  // The commit the checks verified: the passing attempt's, or the last earlier one when it changed nothing more.
  const verified = record.attempts.filter((a) => a.n <= n && typeof a.commit === 'string').pop()?.commit ?? undefined;
  for (const { effect, key } of commits) {
    if (sideEffectsSpent(run)) return run.finish('budget_exhausted', 'effects', candidate);
    try {
      const applied = await acts.applyEffect.executeWithOptions(
        { ...TOOL_CALL, summary: `effect ${effect.name}: ${key}` },
        [
          {
            key,
            repo: input.workspace!,
            branch: session.branch,
            targetBranch: effect.targetBranch,
            message: effect.message,
            ...(verified ? { verified } : {}),
            ...(session.base ? { base: session.base } : {}),
          },
        ],
      );
      // The commit landed; a checkout it had to leave as it was is said in the record, not an error.
      const left = applied.checkout?.state === 'left' && applied.checkout.note ? { note: applied.checkout.note } : {};
      record.effects.push({
        key,
        name: effect.name,
        kind: effect.kind,
        target: applied.target,
        commit: applied.commit,
        alreadyApplied: applied.alreadyApplied,
        at: new Date().toISOString(),
        approvedBy,
        ...left,
      });
      record.budget.used.sideEffects += 1;
    } catch (err) {
      return effectFailed(run, err, candidate);
    }
  }
  if (input.spec.autonomy === 'L3')
    record.audit = { needed: true, reason: 'L3: effects were applied without a human approval' };
  return run.finish('completed', 'passed', candidate);
}

/** True (with the reason recorded) when one more effect would pass maxSideEffects. */
function sideEffectsSpent(run: LoopRun): boolean {
  const { record } = run;
  const stop = effectStop(run.limits(), record.budget.used);
  if (stop) record.error = describeStop(stop, run.limits(), record.budget.used);
  return stop !== null;
}

function effectFailed(run: LoopRun, err: unknown, candidate: string): RunRecord {
  const { record } = run;
  if (isCancellation(err)) throw err;
  record.error = activityErrorMessage(err);
  return run.finish('blocked', 'effect_error', candidate);
}

/** Writes each report effect (see activities/reports.ts); returns the record when the run ends on one. */
async function applyReports(
  run: LoopRun,
  reports: Array<{ effect: Extract<EffectSpec, { kind: 'report' }>; key: string }>,
  candidate: string,
): Promise<RunRecord | undefined> {
  const { input, record, workflowId, secrets } = run;
  for (const { effect, key } of reports) {
    if (sideEffectsSpent(run)) return run.finish('budget_exhausted', 'effects', candidate);
    const dir =
      effect.dir ?? (input.workspace ? `${input.workspace.replace(/\/+$/, '')}/.loopwright/reports` : undefined);
    if (!dir) {
      record.error = `report ${effect.name} needs a folder: give the effect a "dir" or the run a workspace`;
      return run.finish('blocked', 'setup_error', candidate);
    }
    const item = input.itemKey ?? workflowId;
    try {
      const written = await acts.writeReport.executeWithOptions(
        { ...TOOL_CALL, summary: forDisplay(`effect ${effect.name}: report ${item}`, secrets) },
        [
          {
            key,
            dir,
            item,
            title: effect.title ?? item,
            markdown: candidate,
            workflowId: workflowId,
            ...(input.redact ? { redact: input.redact } : {}),
            ...(input.workspace ? { workspace: input.workspace } : {}),
          },
        ],
      );
      record.effects.push({
        key,
        name: effect.name,
        kind: 'report',
        target: dir,
        commit: '',
        path: written.path,
        alreadyApplied: written.alreadyApplied,
        at: new Date().toISOString(),
        approvedBy: null,
      });
      record.budget.used.sideEffects += 1;
    } catch (err) {
      return effectFailed(run, err, candidate);
    }
  }
  return undefined;
}
