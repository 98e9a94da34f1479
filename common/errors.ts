/**
 * Errors that Loopwright raises on purpose. Each says whose fault it is and what to do;
 * the CLI prints `error: <message>` without a stack and exits with `exitCode`.
 */
export class LoopwrightError extends Error {
  /** Process exit code the CLI uses for this error: 2 for bad usage or input, 1 otherwise. */
  readonly exitCode: number = 1;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The user asked for something malformed or impossible (bad flag, invalid JSON, unknown loop). Exit 2. */
export class UsageError extends LoopwrightError {
  override readonly exitCode: number = 2;
}

/** Input that failed a schema; `issues` holds one `path: message` line per problem. Exit 2. */
export class InputError extends UsageError {
  constructor(
    message: string,
    readonly issues: string[],
  ) {
    super(message);
  }
}

/** A run id that the server does not know. Exit 2. */
export class RunNotFoundError extends UsageError {
  constructor(readonly workflowId: string) {
    super(`no run with id ${workflowId}: check the id with \`loopwright list\``);
  }
}

/** A human decision the run would not take (it is not waiting, or it has ended). Exit 2. */
export class DecisionRefusedError extends UsageError {
  constructor(
    readonly workflowId: string,
    readonly reason: string,
  ) {
    super(`decision refused by run ${workflowId}: ${reason}`);
  }
}

/** An id that a run already has (running, or closed and not reusable). Exit 2. */
export class RunAlreadyExistsError extends UsageError {
  constructor(readonly workflowId: string) {
    super(`a run with id ${workflowId} already exists: choose another --id`);
  }
}

/** An event with --force whose earlier run has not ended. Exit 2. */
export class RunStillRunningError extends UsageError {
  constructor(
    readonly workflowId: string,
    readonly state: string,
  ) {
    super(
      `run ${workflowId} is still running (state ${state}): cancel it first (\`loopwright cancel ${workflowId}\`) or wait for it to end, then deliver with --force`,
    );
  }
}

/** A run refused at start: it asked for autonomy its loop is not granted on the worker. Exit 2. */
export class NotGrantedError extends UsageError {
  constructor(
    readonly workflowId: string,
    reason: string,
  ) {
    super(`run ${workflowId} was refused: ${reason}`);
  }
}

/** A running run whose state query no worker answered (none is running, or all are busy or restarting). */
export class NoWorkerError extends LoopwrightError {
  constructor(workflowId: string, status: string, detail: string) {
    super(
      `run ${workflowId} is ${status} and no worker answered its state query: start one with \`npx loopwright worker\` (${detail})`,
    );
  }
}

/** Configuration (environment or files) that cannot work. Exit 2. */
export class ConfigError extends UsageError {}

/** The Temporal server cannot be reached. Exit 2: the fix is to start it or point at it. */
export class ServerUnavailableError extends UsageError {
  constructor(
    readonly address: string,
    options?: { cause?: unknown; secured?: boolean },
  ) {
    super(
      options?.secured
        ? `cannot connect to the Temporal server at ${address} with the TLS or API-key settings given: check TEMPORAL_ADDRESS, TEMPORAL_TLS_* and TEMPORAL_API_KEY (the certificate, its CA and server name, the key)`
        : `cannot reach the Temporal server at ${address}: start one with \`npx loopwright dev\` or set TEMPORAL_ADDRESS`,
      options,
    );
  }
}

/** No Temporal CLI binary could be found or installed; the message lists every way tried. */
export class TemporalBinaryError extends LoopwrightError {}
