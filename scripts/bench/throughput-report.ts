import type { ParkedFigures } from './parked';
import type { Measurement } from './throughput-measure';

/** Issue 17's baseline, measured by the filer before the work: runs/s at N=200 and CPU per run. */
export const BASELINE = { runsPerSecond: '17–18', runsPerSecondHigh: 18, cpuMsPerRun: '~97–100' };
/** Issue 17's targets. */
export const TARGETS = {
  cpuMsPerRun: 50,
  speedup: 2,
  atRuns: 200,
  historyBytes: 8 * 1024,
  parkedRuns: 1000,
  parkedRssMB: 300,
  p50: 1,
  p95: 3,
};

const f = (x: number, digits = 1): string => (Number.isFinite(x) ? x.toFixed(digits) : '-');
const mark = (met: boolean): string => (met ? 'met' : 'NOT MET');
/** Server + worker CPU per run for Loopwright; this process's per run for the plain loop (it has nothing else). */
export const cpuMsPerRun = (m: Measurement): number =>
  (1000 * (m.path === 'plain' ? m.clientCpu : m.serverCpu + m.workerCpu)) / m.runs;

/** The side-by-side table, one line per measurement. */
export function formatMeasurements(ms: Measurement[]): string[] {
  const cols: Array<[string, number, (m: Measurement) => string]> = [
    ['path', Math.max(10, ...ms.map((m) => m.path.length)), (m) => m.path],
    ['latency', 7, (m) => `${m.latencyMs} ms`],
    ['runs', 5, (m) => String(m.runs)],
    ['rounds', 6, (m) => String(m.rounds)],
    ['failed', 6, (m) => String(m.failed)],
    ['calls/run', 9, (m) => f(m.modelCallsPerRun, 2)],
    ['wall s', 7, (m) => f(m.wallSeconds, 2)],
    ['runs/s', 7, (m) => f(m.runs / m.wallSeconds)],
    ['server CPU s', 12, (m) => f(m.serverCpu, 2)],
    ['worker CPU s', 12, (m) => f(m.workerCpu, 2)],
    ['client CPU s', 12, (m) => f(m.clientCpu, 2)],
    ['CPU ms/run', 10, (m) => f(cpuMsPerRun(m))],
    ['hist events/run', 15, (m) => f(m.historyEvents, 0)],
    ['hist KB/run', 11, (m) => f(m.historyBytes / 1024, 2)],
    ['sealed KB/run', 13, (m) => f(m.historySealedBytes / 1024, 2)],
    ['claim-checked KB/run', 20, (m) => f(m.historyClaimCheckedBytes / 1024, 2)],
    ['load 1m start→end', 17, (m) => `${m.loadStart.toFixed(2)}→${m.loadEnd.toFixed(2)}`],
  ];
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(cols[i]?.[1] ?? 0) : c.padStart(cols[i]?.[1] ?? 0))).join('  ');
  return [line(cols.map(([h]) => h)), ...ms.map((m) => line(cols.map(([, , get]) => get(m))))];
}

/** CPU ms per approval of one process while the approvals ran. */
const approvalMs = (p: { runs: number; approveCpu: { server: number; worker: number } }, of: 'server' | 'worker') =>
  f((1000 * p.approveCpu[of]) / p.runs);

/** The parked case in a few lines. */
export function formatParked(p: ParkedFigures): string[] {
  return [
    `parked ${p.runs} runs in ${f(p.parkSeconds)} s (load ${p.loadParked}): worker RSS ${f(p.rssBefore, 0)} MiB before, ${f(p.rssParked, 0)} MiB parked (+${f(p.rssParked - p.rssBefore, 0)} MiB), ${f(p.rssAfter, 0)} MiB after all closed`,
    `approved all ${p.runs} at once in ${f(p.approveSeconds)} s (load ${p.loadApproved}): decision → closed p50 ${f(p.p50, 2)} s, p95 ${f(p.p95, 2)} s, max ${f(p.max, 2)} s; CPU per approval: server ${approvalMs(p, 'server')} ms, worker ${approvalMs(p, 'worker')} ms`,
    `approvals that reported an error: ${p.errors} (of which the run had applied it: ${p.falseErrors}); runs not completed with one applied approval: ${p.notApplied}${p.firstError ? `; first error: ${p.firstError}` : ''}`,
    ...(p.floor
      ? [
          `floor (bare workflow: one model call, then an approval Update; its own worker, same server): worker RSS +${f(p.floor.rssParked - p.floor.rssBefore, 0)} MiB parked; approved all at once in ${f(p.floor.approveSeconds)} s (load ${p.floor.loadApproved}): p50 ${f(p.floor.p50, 2)} s, p95 ${f(p.floor.p95, 2)} s, max ${f(p.floor.max, 2)} s; CPU per approval: server ${approvalMs({ ...p.floor, runs: p.runs }, 'server')} ms, worker ${approvalMs({ ...p.floor, runs: p.runs }, 'worker')} ms; errors ${p.floor.errors}`,
        ]
      : []),
  ];
}

/** Each target beside its figure, marked met or not met from the measurement. */
export function formatTargets(
  ms: Measurement[],
  parked: ParkedFigures | undefined,
  opts: { claimCheck?: boolean } = {},
): string[] {
  const rows: Array<[what: string, figure: string, met: boolean, note: string]> = [];
  const target = (what: string, figure: string, met: boolean, note = '') => rows.push([what, figure, met, note]);
  const runsFloor = TARGETS.speedup * BASELINE.runsPerSecondHigh;
  for (const m of ms.filter((x) => x.path === 'loopwright')) {
    const at = `, ${m.latencyMs} ms model latency`;
    // The bare Temporal workflow at the same latency, measured in the same run: what the server alone costs.
    const floor = ms.find((x) => x.path === 'floor' && x.latencyMs === m.latencyMs);
    const versus = (figure: string) => (floor ? `(floor: ${figure})` : '');
    target(
      `CPU per run (server+worker) ≤ ${TARGETS.cpuMsPerRun} ms${at}`,
      `${f(cpuMsPerRun(m))} ms (today ${BASELINE.cpuMsPerRun})`,
      cpuMsPerRun(m) <= TARGETS.cpuMsPerRun,
      versus(
        `${f(floor ? cpuMsPerRun(floor) : NaN)} ms, of which server ${f(floor ? (1000 * floor.serverCpu) / floor.runs : NaN)} ms; Loopwright's server ${f((1000 * m.serverCpu) / m.runs)} ms`,
      ),
    );
    const note =
      m.atOnce === TARGETS.atRuns ? '' : `(measured at N=${m.atOnce}; the target is at N=${TARGETS.atRuns}) `;
    target(
      `runs/s ≥ ${TARGETS.speedup}× today (${BASELINE.runsPerSecond}) = ${runsFloor}${at}`,
      `${f(m.runs / m.wallSeconds)} runs/s`,
      m.runs / m.wallSeconds >= runsFloor,
      note + versus(`${f(floor ? floor.runs / floor.wallSeconds : NaN)} runs/s`),
    );
    target(
      `history per run ≤ ${TARGETS.historyBytes / 1024} KB, payloads ${opts.claimCheck ? 'claim-checked (LOOPWRIGHT_PAYLOAD_STORE)' : 'in clear'}${at}`,
      `${f(m.historyBytes / 1024, 2)} KB, ${f(m.historyEvents, 0)} events`,
      m.historyBytes <= TARGETS.historyBytes,
      versus(`${f(floor ? floor.historyBytes / 1024 : NaN, 2)} KB, ${f(floor?.historyEvents ?? NaN, 0)} events`),
    );
    target(
      `history per run ≤ ${TARGETS.historyBytes / 1024} KB, sealed with a key ring${opts.claimCheck ? ' and claim-checked' : ''}${at}`,
      `${f(m.historySealedBytes / 1024, 2)} KB`,
      m.historySealedBytes <= TARGETS.historyBytes,
      versus(`${f(floor ? floor.historySealedBytes / 1024 : NaN, 2)} KB`),
    );
    // The opt-in claim check, beside the default (measured when the bench runs with it).
    if (!opts.claimCheck)
      target(
        `history per run ≤ ${TARGETS.historyBytes / 1024} KB, claim-checked (opt-in LOOPWRIGHT_PAYLOAD_STORE)${at}`,
        `${f(m.historyClaimCheckedBytes / 1024, 2)} KB`,
        m.historyClaimCheckedBytes <= TARGETS.historyBytes,
        versus(`${f(floor ? floor.historyClaimCheckedBytes / 1024 : NaN, 2)} KB`),
      );
  }
  if (parked) {
    const note =
      parked.runs === TARGETS.parkedRuns
        ? ''
        : `(measured with ${parked.runs} parked; the targets are for ${TARGETS.parkedRuns})`;
    const addedMB = ((parked.rssParked - parked.rssBefore) * 1024 * 1024) / 1e6;
    target(
      `${TARGETS.parkedRuns} parked runs add ≤ ${TARGETS.parkedRssMB} MB to worker RSS`,
      `+${f(addedMB, 0)} MB`,
      addedMB <= TARGETS.parkedRssMB,
      note,
    );
    const floor = parked.floor;
    target(
      `approving them: decision → closed p50 ≤ ${TARGETS.p50} s`,
      `${f(parked.p50, 2)} s`,
      parked.p50 <= TARGETS.p50,
      note + (floor ? ` (floor: ${f(floor.p50, 2)} s)` : ''),
    );
    target(
      `approving them: decision → closed p95 ≤ ${TARGETS.p95} s`,
      `${f(parked.p95, 2)} s`,
      parked.p95 <= TARGETS.p95,
      note + (floor ? ` (floor: ${f(floor.p95, 2)} s)` : ''),
    );
    target(
      'approving them: no false errors',
      `${parked.falseErrors} false, ${parked.errors} in all`,
      parked.falseErrors === 0,
      note,
    );
  }
  const [whatWidth, figureWidth] = [0, 1].map((i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map(
    ([what, figure, met, note]) =>
      `${what.padEnd(whatWidth ?? 0)}  ${figure.padEnd(figureWidth ?? 0)}  ${mark(met).padEnd(8)}${note ? ` ${note}` : ''}`,
  );
}
