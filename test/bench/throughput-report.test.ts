import { formatTargets } from '../../scripts/bench/throughput-report';
import type { Measurement } from '../../scripts/bench/throughput-measure';

/** The bench's target lines, from made-up measurements: marked from the figures, in aligned columns. */
const measurement = (path: Measurement['path'], over: Partial<Measurement>): Measurement => ({
  path,
  latencyMs: 0,
  runs: 200,
  atOnce: 200,
  rounds: 1,
  failed: 0,
  wallSeconds: 10,
  serverCpu: 6,
  workerCpu: 6,
  clientCpu: 1,
  modelCallsPerRun: 4,
  historyEvents: 34,
  historyBytes: 12 * 1024,
  historySealedBytes: 10 * 1024,
  historyClaimCheckedBytes: 6 * 1024,
  historyBreakdown: [],
  loadStart: 1,
  loadEnd: 1,
  ...over,
});

test('each target is marked from its figure, the clear and the sealed history each against 8 KB, in aligned columns', () => {
  const lines = formatTargets(
    [
      measurement('floor', { historyBytes: 5.5 * 1024, historySealedBytes: 8 * 1024 }),
      measurement('loopwright', {
        historyBytes: 11.75 * 1024,
        historySealedBytes: 7.5 * 1024,
        serverCpu: 4,
        workerCpu: 5,
      }),
    ],
    undefined,
  );
  const line = (start: string) => lines.find((l) => l.startsWith(start)) ?? `no line starts with ${start}`;
  expect(line('history per run ≤ 8 KB, payloads in clear')).toMatch(
    /11\.75 KB, 34 events\s+NOT MET\s+\(floor: 5\.50 KB/,
  );
  expect(line('history per run ≤ 8 KB, sealed with a key ring')).toMatch(/7\.50 KB\s+met\s+\(floor: 8\.00 KB\)/);
  expect(line('history per run ≤ 8 KB, claim-checked (opt-in LOOPWRIGHT_PAYLOAD_STORE)')).toMatch(
    /6\.00 KB\s+met\s+\(floor: 6\.00 KB\)/,
  );
  expect(line('CPU per run (server+worker) ≤ 50 ms')).toMatch(/45\.0 ms .*\s+met\s/);
  expect(line('runs/s')).toMatch(/20\.0 runs\/s\s+NOT MET/);
  const markAt = lines.map((l) => l.search(/ (met|NOT MET) /));
  expect(new Set(markAt).size).toBe(1);
  expect(markAt[0]).toBeGreaterThan(0);
});

test('run with the claim check, the clear-history line says so and the opt-in line is not repeated', () => {
  const lines = formatTargets(
    [measurement('floor', {}), measurement('loopwright', { historyBytes: 5.9 * 1024, historySealedBytes: 6.1 * 1024 })],
    undefined,
    { claimCheck: true },
  );
  expect(lines.find((l) => l.includes('payloads claim-checked (LOOPWRIGHT_PAYLOAD_STORE)'))).toMatch(
    /5\.90 KB, 34 events\s+met/,
  );
  expect(lines.find((l) => l.includes('sealed with a key ring and claim-checked'))).toMatch(/6\.10 KB\s+met/);
  expect(lines.some((l) => l.includes('opt-in'))).toBe(false);
});
