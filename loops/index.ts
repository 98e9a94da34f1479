import { UsageError } from '../common/errors';
import { ciTriage } from './ci-triage';
import { evaluateOptimize } from './evaluate-optimize';
import { fixTest } from './fix-test';
import type { LoopDefinition } from './loop-definition';

/** The built-in loops, by name. */
export const BUILT_IN_LOOPS: ReadonlyMap<string, LoopDefinition<any>> = new Map(
  [evaluateOptimize, fixTest, ciTriage].map((loop) => [loop.name, loop as LoopDefinition<any>]),
);

/** The loop called `name`, or a UsageError that lists the known ones. */
export function getLoop(name: string): LoopDefinition<any> {
  const loop = BUILT_IN_LOOPS.get(name);
  if (!loop) throw new UsageError(`unknown loop "${name}": known loops are ${[...BUILT_IN_LOOPS.keys()].join(', ')}`);
  return loop;
}
