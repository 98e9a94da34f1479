import { LoopwrightError, UsageError } from '../common/errors';
import type { DevServerLock } from './dev-server-lock';

/** A dev server is already running on this lock file (its pid is alive). Exit 2. */
export class DevServerRunningError extends UsageError {
  readonly pid: number;
  readonly address: string;
  readonly uiUrl?: string;
  constructor(lock: DevServerLock) {
    const where = lock.uiUrl ? `UI ${lock.uiUrl}` : `address ${lock.address}`;
    super(
      `loopwright dev is already running (pid ${lock.pid}, ${where}): stop it with Ctrl-C in its terminal, or use that one`,
    );
    this.pid = lock.pid;
    this.address = lock.address;
    this.uiUrl = lock.uiUrl;
  }
}

/** A port the dev server needs is taken by another program. Exit 2. */
export class PortInUseError extends UsageError {
  constructor(
    readonly port: number,
    what: 'port' | 'UI port',
  ) {
    super(
      what === 'port'
        ? `port ${port} is already in use: another Temporal server? set --port`
        : `UI port ${port} is already in use: set --ui-port, or --headless for no UI`,
    );
  }
}

/** The dev server exited or did not answer in time; `logTail` holds its last log lines. */
export class DevServerStartError extends LoopwrightError {
  constructor(
    message: string,
    readonly logFile: string,
    readonly logTail: string,
  ) {
    super(`${message} (log ${logFile})${logTail ? `:\n${logTail}` : ''}`);
  }
}
