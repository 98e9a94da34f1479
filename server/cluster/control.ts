/** Stopping a cluster, and killing and restarting its processes (the failure tests), by the pids in its state. */
import { existsSync } from 'fs';
import { dirname, join } from 'path';
import { UsageError } from '../../common/errors';
import { isPostgresReady } from './postgres';
import {
  type ClusterProcess,
  type ClusterState,
  isRunning,
  launch,
  readState,
  removeState,
  sleep,
  stopProcess,
  waitFor,
  writeState,
} from './processes';

/** Stops every process of the cluster in `dir` (workers first, PostgreSQL last) by its recorded pid; returns their names. */
export async function stopCluster(dir: string): Promise<string[]> {
  const state = readState(dir);
  if (!state) return [];
  const running = state.processes.filter(isRunning);
  const order = (p: ClusterProcess) =>
    p.name.startsWith('worker-') || p.name === 'ui' || p.name === 'codec' ? 0 : p.name === 'postgres' ? 2 : 1;
  for (const rank of [0, 1, 2]) await Promise.all(running.filter((p) => order(p) === rank).map((p) => stopProcess(p)));
  const left = state.processes.filter(isRunning);
  if (left.length > 0)
    throw new Error(`still running after stop: ${left.map((p) => `${p.name} (pid ${String(p.pid)})`).join(', ')}`);
  removeState(dir);
  return running.map((p) => p.name);
}

function processNamed(dir: string, name: string): { state: ClusterState; p: ClusterProcess } {
  const state = readState(dir);
  const p = state?.processes.find((x) => x.name === name);
  if (!state || !p) throw new UsageError(`no process ${name} in the cluster at ${dir}`);
  return { state, p };
}

/** Kills one process of the cluster (default SIGKILL, as a crash would) and waits until it is gone. */
export async function killService(dir: string, name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  await stopProcess(processNamed(dir, name).p, signal);
}

/** Starts one process of the cluster again exactly as it was started (same ports, environment and log). */
export async function restartService(dir: string, name: string): Promise<void> {
  await restartServices(dir, [name]);
}

/**
 * Starts processes of the cluster again, all at once, exactly as they were started, and watches
 * them as a supervisor (systemd, Kubernetes, compose's `restart:`) would: one that exits within
 * `settleMs` is started again (5 times at most, PostgreSQL 30). PostgreSQL exits at start while the backends of a
 * postmaster killed with SIGKILL still hold its shared memory (they leave once they notice it is
 * gone), and Temporal services started together can race on the cluster metadata (see
 * {@link checkAlive}). PostgreSQL is waited for until it accepts connections.
 */
export async function restartServices(dir: string, names: string[], settleMs = 5_000): Promise<void> {
  const state = readState(dir);
  const chosen = names.map((name) => {
    const p = state?.processes.find((x) => x.name === name);
    if (!state || !p) throw new UsageError(`no process ${name} in the cluster at ${dir}`);
    if (isRunning(p)) throw new UsageError(`${name} is still running (pid ${String(p.pid)})`);
    return p;
  });
  for (const p of chosen) launch(p);
  writeState(dir, state!);
  const tries = new Map<ClusterProcess, number>();
  const relaunchExited = () => {
    for (const p of chosen) {
      if (isRunning(p)) continue;
      const n = (tries.get(p) ?? 0) + 1;
      // PostgreSQL may take a few seconds to be startable again (the old backends leaving).
      if (n > (p.name === 'postgres' ? 30 : 5))
        throw new Error(`${p.name} keeps exiting after a restart: see ${p.logFile}`);
      tries.set(p, n);
      launch(p);
    }
    writeState(dir, state!);
  };
  const postgres = chosen.find((p) => p.name === 'postgres');
  if (postgres) {
    await waitFor(
      'PostgreSQL',
      async () => {
        relaunchExited();
        return isPostgresReady(dirname(postgres.command), state!.pgPort);
      },
      postgres.logFile,
      60_000,
    );
  }
  for (const end = Date.now() + settleMs; Date.now() < end; await sleep(500)) relaunchExited();
  relaunchExited();
}

/** True when `dir` holds a cluster state (running or not). */
export function hasCluster(dir: string): boolean {
  return existsSync(join(dir, 'state.json'));
}
