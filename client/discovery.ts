import path from 'node:path';
import type { DiscoveryInput, DiscoveryResult } from '../common/discovery';
import { InputError, UsageError } from '../common/errors';
import { zodIssues } from '../common/format';
import { getLoop } from '../loops';
import { discoveryWorkflow } from '../workflows/discovery/discovery-workflow';
import type { LoopwrightClient } from './loopwright-client';
import { newRunId, startUnderFreshId } from './run-id';

/**
 * Starts `discoveryWorkflow` for `loop` (id `<loop>/discovery/<time>-<hex>`) and returns its id.
 * A loop without a discovery source is a UsageError; input that fails the source's schema is an
 * InputError (both exit 2), raised before anything reaches the server. The repository path is
 * made absolute, since workers resolve it on their own machine.
 */
export async function startDiscovery(
  client: LoopwrightClient,
  loop: string,
  rawInput: unknown,
): Promise<{ workflowId: string }> {
  const parsed = discoverySchemaOf(loop).safeParse(rawInput);
  if (!parsed.success) {
    const issues = zodIssues(parsed.error);
    throw new InputError(`invalid discovery input for loop ${loop}: ${issues.join('; ')}`, issues);
  }
  const input = parsed.data as Omit<DiscoveryInput, 'loop'>;
  return startUnderFreshId(
    () => newRunId(`${loop}/discovery`),
    async (workflowId) => {
      await client.temporal.workflow.start(discoveryWorkflow, {
        taskQueue: client.config.taskQueue,
        workflowId,
        args: [{ ...input, loop, repo: path.resolve(input.repo) } satisfies DiscoveryInput],
        staticSummary: `discover ${loop} work in ${input.repo}`,
      });
      return { workflowId };
    },
  );
}

/** The discovery input schema of `loop`; a UsageError (exit 2) for an unknown loop or one without a discovery source. */
export function discoverySchemaOf(loop: string) {
  const definition = getLoop(loop);
  if (!definition.discoveryInputSchema) {
    throw new UsageError(
      `loop ${loop} has no discovery source: only ci-triage finds its own work items (start runs of ${loop} with \`loopwright run\`)`,
    );
  }
  return definition.discoveryInputSchema;
}

/** The result of a discovery run, once it has ended. */
export async function discoveryResult(client: LoopwrightClient, workflowId: string): Promise<DiscoveryResult> {
  return client.temporal.workflow.getHandle<typeof discoveryWorkflow>(workflowId).result();
}
