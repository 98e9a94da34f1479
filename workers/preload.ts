/**
 * The modules the workflow bundle evaluates once per worker instead of once per workflow
 * (Temporal's `preloadModules`, for workers that reuse one V8 context, the default): every
 * `common/` module the workflows import. The SDK shares them across every workflow in the
 * context and deep-freezes their exports, so only modules without per-workflow state belong here:
 * `common/` holds pure, deterministic code by rule (common/README.md), and the workflow modules
 * themselves, `@temporalio/workflow` and anything that keeps state are never preloaded.
 * test/workers/bundle.test.ts fails when a `common/` module reaches the bundle without being listed.
 */
export const PRELOADED_COMMON = [
  'activity-summary',
  'agent',
  'budget',
  'code-review',
  'decision',
  'decision-check',
  'duration',
  'errors',
  'failure-types',
  'improve/evaluate',
  'improve/proposal',
  'improve/proposal-shape',
  'improve/store-request',
  'judge-prompt',
  'loop-rules',
  'must',
  'pricing',
  'prompts',
  'redact',
  'redact-decode',
  'redact-env',
  'redact-patterns',
  'redact-shapes',
  'run-presentation',
  'run-record',
  'search-attributes',
  'shape-check',
  'sshsig',
  'test-key',
  'trust-record',
  'usage',
] as const;

/** The preloaded modules as paths the bundler resolves (the compiled files, or the sources under ts-node). */
export function preloadModules(): string[] {
  return PRELOADED_COMMON.map((m) => require.resolve(`../common/${m}`));
}
