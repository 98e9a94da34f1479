import demoScript from '../../loops/fixtures/evaluate-optimize-demo.json';
import { startModelServer, type ModelServer } from '../../model-server/server';
import { parseModelScript } from '../../model-server/script';
import { startEmbeddedStack } from '../../workers/embedded-stack';
import { LoopwrightClient } from '../loopwright-client';
import { progressLine, summarize, type Output } from '../output';
import { untilSignal } from './process';

/** The task the demo gives `evaluate-optimize`; the scripted session answers exactly this. */
export const DEMO_INPUT = {
  task: 'Write a haiku about a worker process that crashes and resumes from its durable history.',
  rubric: ['exactly three lines', 'mentions a crash', 'ends with the work resuming'],
  maxAttempts: 3,
};

/** A link to a run's page in the Web UI. */
export function runUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/**
 * `demo` (what `npm start` runs): the embedded stack plus one `evaluate-optimize` run. Without
 * ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) the model is the scripted model server playing a
 * recorded session: the first attempt fails the judge, the feedback fixes the second. The stack
 * keeps running for the Web UI until Ctrl-C, unless --exit is given.
 */
export async function demoCommand(opts: { exit?: boolean }, env: Record<string, string | undefined>, io: Output): Promise<number> {
  const runEnv = { ...env };
  let model: ModelServer | undefined;
  if (!env.ANTHROPIC_API_KEY && !env.ANTHROPIC_BASE_URL) {
    model = await startModelServer({ script: parseModelScript(demoScript, 'loops/fixtures/evaluate-optimize-demo.json'), port: 0 });
    runEnv.ANTHROPIC_BASE_URL = model.url;
    io.out(`No ANTHROPIC_API_KEY is set, so the demo uses the scripted model server (a recorded session) at ${model.url}.`);
    io.out('Set ANTHROPIC_API_KEY to run the same demo against Claude.');
  }
  const stack = await startEmbeddedStack({ env: runEnv, log: io.err });
  const client = await LoopwrightClient.connect({ env: runEnv, address: stack.address });
  try {
    io.out(`Temporal dev server: ${stack.address}${stack.uiUrl ? `, Web UI: ${stack.uiUrl}` : ''}`);
    const { workflowId } = await client.run('evaluate-optimize', DEMO_INPUT, { trigger: { kind: 'cli', by: 'demo' } });
    io.out(`Started evaluate-optimize: ${workflowId}`);
    const record = await client.wait(workflowId, (r) => io.out(progressLine(r)));
    summarize(record).forEach((l) => io.out(l));
    if (stack.uiUrl) io.out(`See the run in the Web UI: ${runUrl(stack.uiUrl, stack.namespace, workflowId)}`);
    io.out(`Its record: npx loopwright status ${workflowId}`);
    if (!opts.exit) {
      io.out('The server and worker keep running so you can browse the run; Ctrl-C stops them.');
      await Promise.race([untilSignal(), stack.done]);
    }
    return record.state === 'completed' ? 0 : 3;
  } finally {
    await client.close();
    await stack.stop();
    await model?.close();
  }
}
