/**
 * The processes of a cluster, recorded in `<cluster dir>/state.json` so that `stop` (or a test
 * in another process) finds each by the pid it was started with, and can start one again the
 * same way after killing it.
 */
import { spawn } from 'child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { join } from 'path';
import { isHolderAlive, isPidAlive, processStart } from '../dev-server-lock';

/** How to start one process of the cluster, and the one that runs now. */
export interface ClusterProcess {
  /** `postgres`, `history`, `matching`, `frontend`, `frontend-2`, `internal-worker`, `codec`, `ui`, `worker-1`, ... */
  name: string;
  command: string;
  args: string[];
  /** The whole environment it gets. */
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  /** Its output, appended to across restarts. */
  logFile: string;
  /** Signal of a clean stop: SIGTERM, or SIGINT (PostgreSQL's fast shutdown). */
  stopSignal: NodeJS.Signals;
  pid?: number;
  pidStart?: string;
}

/** What `state.json` holds. */
export interface ClusterState {
  /** Frontend addresses, the first is the one to use. */
  addresses: string[];
  namespace: string;
  pgPort: number;
  /** The Web UI, when started. */
  uiUrl?: string;
  /** The codec server the Web UI decodes payloads through, when it has one. */
  codecUrl?: string;
  startedAt: string;
  processes: ClusterProcess[];
}

export function statePath(dir: string): string {
  return join(dir, 'state.json');
}

export function readState(dir: string): ClusterState | undefined {
  const file = statePath(dir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ClusterState) : undefined;
}

/** Writes the state atomically (a rename), so a reader never sees half of it. */
export function writeState(dir: string, state: ClusterState): void {
  mkdirSync(dir, { recursive: true });
  const tmp = `${statePath(dir)}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  renameSync(tmp, statePath(dir));
}

export function removeState(dir: string): void {
  rmSync(statePath(dir), { force: true });
}

/** Starts `p` detached from this process (it outlives it), its output appended to its log; records pid and start time in `p`. */
export function launch(p: ClusterProcess): ClusterProcess {
  const fd = openSync(p.logFile, 'a', 0o600);
  try {
    const child = spawn(p.command, p.args, {
      env: p.env,
      uid: p.uid,
      gid: p.gid,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${p.name} (${p.command})`);
    p.pid = child.pid;
    p.pidStart = processStart(child.pid);
  } finally {
    closeSync(fd);
  }
  return p;
}

/** True while the process `p` recorded still runs (the same process, not a reuse of its pid). */
export function isRunning(p: ClusterProcess): boolean {
  return p.pid !== undefined && isHolderAlive({ pid: p.pid, pidStart: p.pidStart }) && !isZombie(p.pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `signal` to `p` (only if it is still the process recorded) and waits for it to end; SIGKILL after `graceMs`. */
export async function stopProcess(
  p: ClusterProcess,
  signal: NodeJS.Signals = p.stopSignal,
  graceMs = 20_000,
): Promise<void> {
  if (!isRunning(p) || p.pid === undefined) return;
  process.kill(p.pid, signal);
  const end = Date.now() + graceMs;
  while (isRunning(p) && isPidAlive(p.pid)) {
    if (Date.now() > end) {
      process.kill(p.pid, 'SIGKILL');
      await sleep(200);
      break;
    }
    await sleep(100);
  }
}

/** Waits until `check` is true, every 500 ms; throws after `timeoutMs`, naming `what` and the log to read. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  logFile: string | undefined,
  timeoutMs = 120_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${logFile ? `: see ${logFile}` : ''}`);
    await sleep(500);
  }
}

/** The last lines of a process's log on one line, for an error that outlives the log's folder. */
export function logTail(logFile: string, lines = 3): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-lines).join(' | ') || '(its log is empty)';
  } catch {
    return '(no log)';
  }
}

/** Why a Temporal process stopped: the error of the last fatal line of its log. */
function exitReason(p: ClusterProcess): string {
  const fatal = readFileSync(p.logFile, 'utf8')
    .split('\n')
    .reverse()
    .find((line) => /"level":"fatal"|Unable to/.test(line));
  return fatal ? (/"error":"([^"]*)"/.exec(fatal)?.[1] ?? fatal.slice(0, 300)) : 'no fatal line';
}

const startTries = new Map<string, number>();

/**
 * Starts again a Temporal process that exited while the cluster starts (once more, at most twice:
 * a port another program took between our check and its bind, say), and throws with the reason
 * from its log when it keeps exiting.
 */
export function checkAlive(processes: ClusterProcess[], log: (line: string) => void): void {
  for (const p of processes) {
    if (isRunning(p)) continue;
    const reason = exitReason(p);
    const tries = (startTries.get(p.logFile) ?? 0) + 1;
    if (tries > 2) throw new Error(`the Temporal ${p.name} service exited at start (${reason}): see ${p.logFile}`);
    startTries.set(p.logFile, tries);
    log(`the Temporal ${p.name} service exited at start (${reason.slice(0, 200)}); starting it again`);
    launch(p);
  }
}
