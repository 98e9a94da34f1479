import path from 'node:path';
import { InputError } from '../common/errors';
import { zodIssues } from '../common/format';
import type { LoopInput, Trigger } from '../common/loop-input';
import type { Models } from '../common/loop-spec';
import type { CurrentHarness } from '../common/improve/types';
import { pinPrices, type ModelPrice } from '../common/pricing';
import { hashRubric } from './rubric-hash';
import { getLoop } from './index';

/** Settings a client applies to the runs it starts. */
export interface LoopConfig {
  models: Models;
  /** Price table; the run pins the prices of its models. */
  prices: Record<string, ModelPrice>;
}

/**
 * Validates a user's input against the loop's schema and builds the workflow input: the task
 * and the pinned snapshot of the spec with its rubric hash. Bad input is an InputError that
 * names each field at fault (exit 2), raised before anything reaches the server. `harness` is
 * the loop's current harness version (see harness/store.ts); without it, the built-in one (v1).
 */
export function planRun(
  loopName: string,
  rawInput: unknown,
  config: LoopConfig,
  trigger: Trigger,
  harness?: CurrentHarness,
): LoopInput {
  const loop = getLoop(loopName);
  const parsed = loop.inputSchema.safeParse(rawInput);
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    throw new InputError(`invalid input for loop ${loop.name}: ${issues.join('; ')}`, issues);
  }
  const plan = loop.plan(parsed.data, { models: config.models, harness: harness?.harness ?? loop.harness });
  const rubric = plan.spec.checks.flatMap((c) => (c.kind === 'judge' ? c.rubric : []));
  const rubricHashes = Object.fromEntries(
    plan.spec.checks.flatMap((c) => (c.kind === 'judge' ? [[c.name, hashRubric(c.rubric)]] : [])),
  );
  return {
    loop: loop.name,
    task: plan.task,
    spec: plan.spec,
    rubricHash: hashRubric(rubric),
    rubricHashes,
    itemKey: plan.itemKey,
    prices: pinPrices([plan.spec.models.worker, plan.spec.models.checker], config.prices),
    // Workers resolve the workspace on their own machine: send an absolute path.
    workspace: plan.workspace ? path.resolve(plan.workspace) : undefined,
    trigger,
    harness: { version: harness?.version ?? 1 },
    input: parsed.data,
  };
}
