import { metricMeter } from '@temporalio/workflow';
import { redact } from '../../common/redact';
import type { Escalation, RunRecord, Verdict } from '../../common/run-record';
import type { Usage } from '../../common/usage';

/**
 * The project's own Prometheus metrics, emitted from workflow code through Temporal's workflow
 * metric meter: the SDK drops them while a history is replayed, so each fact counts once even
 * when a worker restarts and replays the run. They reach the same `/metrics` endpoint as the
 * runtime's metrics when the worker runs with `--metrics <host:port>` (see workers/runtime.ts).
 * Names are listed in README ("Metrics"); every series carries the `loop` label. Labels hold
 * the loop's and checks' names from its spec, the role, the autonomy, the state, the stop reason
 * and kinds (fixed words); the names are redacted (patterns and the run's pinned names), so a
 * spec cannot put a secret on a scraped series.
 */
export const METRICS = {
  runs: 'loopwright_runs',
  attempts: 'loopwright_run_attempts',
  tokens: 'loopwright_tokens',
  cost: 'loopwright_cost_usd',
  checks: 'loopwright_checks',
  humanWait: 'loopwright_human_wait_seconds',
} as const;

/** Metrics of one run of `loop`. */
export function runMetrics(loop: string, autonomy: string, names: string[] = []) {
  const labels = new Map<string, string>();
  const label = (value: string): string => {
    let safe = labels.get(value);
    if (safe === undefined) labels.set(value, (safe = redact(value, { names })));
    return safe;
  };
  const tags = { loop: label(loop) };
  const runs = metricMeter.createCounter(
    METRICS.runs,
    'runs',
    'Runs that reached a terminal state, by state and stop reason',
  );
  const attempts = metricMeter.createHistogram(
    METRICS.attempts,
    'int',
    'attempts',
    'Attempts a run used, recorded when it ends',
  );
  const tokens = metricMeter.createCounter(
    METRICS.tokens,
    'tokens',
    'Model tokens charged to runs (input and output), by role',
  );
  const cost = metricMeter.createHistogram(
    METRICS.cost,
    'float',
    'usd',
    'Dollars charged per model call; the _sum is the cost by loop',
  );
  const checks = metricMeter.createCounter(
    METRICS.checks,
    'verdicts',
    'Check verdicts by check and result; pass rate = passed="true" / all',
  );
  const humanWait = metricMeter.createHistogram(
    METRICS.humanWait,
    'float',
    's',
    'Time a run waited for a human decision, by escalation kind and whether one came',
  );
  return {
    charged(role: 'worker' | 'checker', usage: Usage): void {
      const n = usage.inputTokens + usage.outputTokens;
      if (n > 0) tokens.add(n, { ...tags, role });
      if (usage.costUsd > 0) cost.record(usage.costUsd, { ...tags, role });
    },
    verdicts(vs: Verdict[]): void {
      for (const v of vs) checks.add(1, { ...tags, check: label(v.check), kind: v.kind, passed: String(v.passed) });
    },
    waited(kind: Escalation['kind'], ms: number, decided: boolean): void {
      humanWait.record(ms / 1000, { ...tags, kind, outcome: decided ? 'decided' : 'timed_out' });
    },
    ended(record: RunRecord): void {
      runs.add(1, { ...tags, autonomy, state: record.state, stop_reason: record.stopReason ?? 'none' });
      attempts.record(record.attempts.length, tags);
    },
  };
}
