import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  Client,
  Connection,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcServiceError,
  type WorkflowHandle,
} from '@temporalio/client';
import { readConfig, type LoopwrightConfig } from '../common/config';
import { decisionMessage, decisionWait, type AppliedDecision, type DecisionInput } from '../common/decision';
import { DecisionSchema } from '../common/decision-schema';
import { zodIssues } from '../common/format';
import { DECISION_NAMESPACE } from '../common/sshsig';
import { levelNeedingGrant } from '../common/trust';
import { BUILT_IN_LOOPS } from '../loops';
import {
  DecisionRefusedError,
  LoopwrightError,
  NotGrantedError,
  NoWorkerError,
  RunAlreadyExistsError,
  RunNotFoundError,
  ServerUnavailableError,
  UsageError,
} from '../common/errors';
import type { LoopInput, Trigger } from '../common/loop-input';
import { isTerminal, RUN_STATES, type RunRecord, type RunState } from '../common/run-record';
import { LoopAttempt, LoopCostUsd, LoopName, LoopState, LoopTokens } from '../common/search-attributes';
import { decisionUpdate, stateQuery } from '../workflows/messages';
import { LOOP_RUN_TYPES, loopWorkflowV2 } from '../workflows/loop/loop-workflow';
import { planRun } from '../loops/plan-run';
import { readPrices, type ModelPrice } from '../common/pricing';
import { payloadStoreFromEnv } from '../crypto/claim-check';
import { clientDataConverter } from '../crypto/codec';
import { keyRingFromEnv } from '../crypto/keyring';
import { processRedaction } from '../crypto/ring-redaction';
import { isSecured, temporalConnectionOptions } from '../server/temporal-connection';
import type { Redaction } from '../common/redact';
import { runPresentation } from '../common/run-presentation';
import { allOf, clause, oneOf } from '../common/visibility-query';
import { escapeLine } from '../common/terminal';
import { currentHarness } from '../harness/store';
import type { CurrentHarness } from '../common/improve/types';
import { waitToken } from './wait-token';
import { checkInputValue } from './prechecks';
import { serviceError } from './service-errors';
import { checkRunId, newRunId, startUnderFreshId } from './run-id';
import { signingKeyPath, signMessage } from './signing';
import type { RunSummary } from './types';

export interface ClientOptions {
  /** Defaults from the environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, LOOPWRIGHT_TASK_QUEUE, LOOPWRIGHT_*_MODEL. */
  env?: Record<string, string | undefined>;
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

/** A decision as a caller gives it; the client adds the id that tracks it. */
export type DecisionRequest = DecisionInput extends infer D
  ? D extends DecisionInput
    ? Omit<D, 'id'> & { id?: string }
    : never
  : never;

const POLL_MS = 250;
/** The longest pause between two reads of a waiting run's progress. */
const MAX_POLL_MS = 1000;
/** How long `decide` waits for a worker to take a decision (a worker is polling: it may be busy with many). */
const DECIDE_TIMEOUT_MS = 180_000;
/** How long a task queue seen polled by a worker is believed without asking the server again. */
const WORKER_SEEN_MS = 5_000;
/** How long one sending of the decision waits before the record is read and it is sent again. */
const DECIDE_ATTEMPT_MS = 30_000;

/**
 * The typed client for Loopwright runs: start them, read their record, send decisions,
 * list and cancel them. The CLI is a thin layer over it; scripts use it directly.
 */
export class LoopwrightClient {
  /** Task queues seen polled by a worker, and when (see hasWorker). */
  private readonly workerSeen = new Map<string, number>();

  private constructor(
    readonly temporal: Client,
    private readonly connection: Connection,
    readonly config: LoopwrightConfig,
    readonly prices: Record<string, ModelPrice>,
    /** What this process redacts (its secret variables' values and LOOPWRIGHT_REDACT names). */
    readonly redaction: Redaction,
    /** Where this process finds its signing key (LOOPWRIGHT_SIGNING_KEY, git's user.signingkey). */
    private readonly env: Record<string, string | undefined>,
  ) {}

  /**
   * Connects to Temporal; a server that does not answer is a ServerUnavailableError. With a key
   * ring (LOOPWRIGHT_KEYS in `env`) every payload and failure message it sends or reads goes
   * through the encryption codec.
   */
  static async connect(opts: ClientOptions = {}): Promise<LoopwrightClient> {
    const base = readConfig(opts.env ?? process.env);
    const config = {
      ...base,
      temporalAddress: opts.address ?? base.temporalAddress,
      namespace: opts.namespace ?? base.namespace,
      taskQueue: opts.taskQueue ?? base.taskQueue,
    };
    const env = opts.env ?? process.env;
    // With a key ring (LOOPWRIGHT_KEYS), payloads and failure messages are encrypted; a bad ring is a ConfigError before anything connects.
    const ring = keyRingFromEnv(env);
    // So is a bad LOOPWRIGHT_PAYLOAD_STORE (the claim check, crypto/claim-check.ts).
    const dataConverter = clientDataConverter(ring, payloadStoreFromEnv(env));
    // TLS and API key (TEMPORAL_TLS_*, TEMPORAL_API_KEY): a bad one is a ConfigError before anything connects.
    const secure = temporalConnectionOptions(env);
    let connection: Connection;
    try {
      connection = await Connection.connect({ address: config.temporalAddress, connectTimeout: '5s', ...secure });
    } catch (err) {
      throw new ServerUnavailableError(config.temporalAddress, { cause: err, secured: isSecured(secure) });
    }
    return new LoopwrightClient(
      new Client({ connection, namespace: config.namespace, dataConverter }),
      connection,
      config,
      readPrices(env),
      processRedaction(env, [], ring),
      env,
    );
  }

  /**
   * Starts a run of `loop` and returns its id; invalid input is refused before it reaches the server.
   * `itemKey` sets the run's LoopItemKey (the key of the event or item it works on). An id already
   * used is a RunAlreadyExistsError; with `reuse`, an id whose earlier run has closed starts a new
   * run (a running one is still refused). An id with a control character or a newline is a
   * UsageError (see {@link checkRunId}).
   */
  async run(
    loop: string,
    input: unknown,
    opts: { id?: string; trigger?: Trigger; itemKey?: string; reuse?: boolean } = {},
  ): Promise<{ workflowId: string; runId: string }> {
    if (opts.id !== undefined) checkRunId(opts.id);
    // The input is checked before anything reaches the server (the harness is read from it).
    this.plan(loop, input, opts.trigger ?? { kind: 'client' }, opts.itemKey);
    const plan = this.plan(
      loop,
      input,
      opts.trigger ?? { kind: 'client' },
      opts.itemKey,
      await this.call(() => currentHarness(this.temporal, this.config.taskQueue, loop)),
    );
    let workflowId = opts.id ?? '';
    const start = (id: string) => {
      workflowId = id;
      return this.temporal.workflow.start(loopWorkflowV2, {
        taskQueue: this.config.taskQueue,
        workflowId,
        args: [plan],
        workflowIdReusePolicy: opts.reuse ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
        ...runPresentation(plan, this.redaction),
      });
    };
    try {
      // An id the user chose is tried once; a generated one is drawn again if another run has it.
      const handle = await (opts.id === undefined
        ? startUnderFreshId(() => newRunId(plan.loop), start)
        : start(opts.id));
      if (needsGrant(plan)) await this.grantVerdict(workflowId);
      return { workflowId, runId: handle.firstExecutionRunId };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) throw new RunAlreadyExistsError(workflowId);
      throw this.translate(err);
    }
  }

  /**
   * A run that asks for autonomy its loop does not have without a grant (L3; L2 with git effects
   * where the loop needs a grant for it) is checked by the worker as it starts, against the
   * operator's grants on the worker: wait for that verdict, so a refusal is one line (exit 2)
   * here. With no worker answering within 15 s the run is left to be checked when one does.
   */
  private async grantVerdict(workflowId: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      let record: RunRecord;
      try {
        record = await this.status(workflowId);
      } catch (err) {
        if (err instanceof NoWorkerError) return;
        throw err;
      }
      if (record.stopReason === 'not_granted')
        throw new NotGrantedError(workflowId, record.error ?? 'the autonomy it asked for is not granted');
      if (record.trust || isTerminal(record.state)) return;
      await sleep(POLL_MS);
    }
  }

  /**
   * Validates `input` with the loop's schema (InputError, exit 2) and builds the workflow input
   * with this client's models and prices, without starting anything (schedules pin it, with the
   * harness version current when the schedule was made). `harness`: the loop's current version
   * (`run` reads it from the loop's harness store); without it, the built-in v1.
   */
  plan(loop: string, input: unknown, trigger: Trigger, itemKey?: string, harness?: CurrentHarness): LoopInput {
    checkInputValue(input, `the input of ${loop}`);
    const plan = planRun(
      loop,
      input,
      { models: { worker: this.config.workerModel, checker: this.config.checkerModel }, prices: this.prices },
      trigger,
      harness,
    );
    return {
      ...plan,
      ...(itemKey === undefined ? {} : { itemKey }),
      ...(this.config.redact.length ? { redact: this.config.redact } : {}),
    };
  }

  /** The workflow type behind an id (`loopWorkflowV2`, `improveWorkflow`, ...); an unknown id is a RunNotFoundError. */
  async workflowType(workflowId: string): Promise<string> {
    return (await this.describe(this.handle(workflowId))).type;
  }

  /** The run's record: live from the workflow while it runs, its result once it ended. */
  async status(workflowId: string): Promise<RunRecord> {
    const handle = this.handle(workflowId);
    const description = await this.describe(handle);
    if (description.status.name === 'COMPLETED') return handle.result();
    try {
      return await this.connection.withDeadline(Date.now() + 10_000, () => handle.query(stateQuery));
    } catch (err) {
      throw new NoWorkerError(workflowId, description.status.name.toLowerCase(), (err as Error).message);
    }
  }

  /**
   * Waits until the run ends or waits for a human, calling `onProgress` on every change of
   * state or attempt. Returns the record at that point. The run's end is long-polled (no CPU
   * while it runs); its progress is read every 250 ms after a change, backing off to once a
   * second while nothing changes (a waiting client used to add about a third to a run's CPU).
   */
  async wait(
    workflowId: string,
    onProgress?: (record: RunRecord) => void,
    onNoWorker?: (err: NoWorkerError) => void,
  ): Promise<RunRecord> {
    const stopWatching = new AbortController();
    let closed = false;
    const ended = this.connection
      .withAbortSignal(stopWatching.signal, () => this.handle(workflowId).result())
      .then(
        () => void (closed = true),
        () => void (closed = true),
      );
    try {
      let last = '';
      let pause = POLL_MS;
      for (;;) {
        let record: RunRecord;
        try {
          record = await this.status(workflowId);
        } catch (err) {
          // A worker may be restarting (or not started yet): the run is durable, keep waiting.
          if (!(err instanceof NoWorkerError)) throw err;
          if (last !== 'no-worker') onNoWorker?.(err);
          last = 'no-worker';
          await sleep(1000);
          continue;
        }
        const key = `${record.state}/${record.attempt}`;
        if (key !== last) onProgress?.(record);
        pause = key === last ? Math.min(pause * 2, MAX_POLL_MS) : POLL_MS;
        last = key;
        if (isTerminal(record.state) || record.state === 'awaiting_human') return record;
        // Once the run has closed, the next read shows how it ended; no more racing the long poll.
        await (closed ? sleep(pause) : Promise.race([sleep(pause), ended]));
      }
    } finally {
      stopWatching.abort();
    }
  }

  /**
   * The armored SSH signature of `message` for the decisions namespace by this process's signing
   * key (LOOPWRIGHT_SIGNING_KEY, else git's user.signingkey), or undefined when none is configured.
   * Decisions and the harness store's rollbacks and regression tasks are signed with it.
   */
  sign(message: string): string | undefined {
    const key = signingKeyPath(this.env);
    return key ? signMessage(key, DECISION_NAMESPACE, message) : undefined;
  }

  /**
   * Sends a human decision as the run's `decide` update and returns what the run applied. The
   * decision is signed with this process's SSH key when one is configured (LOOPWRIGHT_SIGNING_KEY,
   * else git's user.signingkey), over the decision, the run's id and its first Temporal run id; unsigned, the run records
   * it as unverified, or refuses it where signatures are required. A refusal (not its turn, a
   * bad signature, not an approver, malformed) is a DecisionRefusedError with the run's reason,
   * and the run is unharmed: a refused update never reaches its history.
   */
  async decide(workflowId: string, request: DecisionRequest, opts: { wait?: string } = {}): Promise<AppliedDecision> {
    const parsed = DecisionSchema.safeParse({ ...request, id: request.id ?? randomUUID() });
    if (!parsed.success) throw new UsageError(`invalid decision: ${zodIssues(parsed.error).join('; ')}`);
    const handle = this.handle(workflowId);
    const description = await this.describe(handle);
    if (description.status.name !== 'RUNNING') {
      throw new DecisionRefusedError(workflowId, `the run has ended (${endedState(description)})`);
    }
    // No worker, no answer: say so at once, and send nothing that could be applied later unseen.
    if (!(await this.hasWorker(description.taskQueue))) {
      throw new LoopwrightError(
        `no worker polls task queue ${description.taskQueue}, so run ${workflowId} cannot take a decision now: start one with \`npx loopwright worker\`, then decide again (nothing was sent)`,
      );
    }
    // Signed for this run (the first run id of its chain) and the wait it is in, not only its
    // workflow id: a later run under the same id, or a later wait, never takes it (see
    // decisionMessage). The wait is read from the run itself (its state query, as it answers it).
    const firstRunId = description.raw.workflowExecutionInfo?.firstRunId || description.runId;
    const key = signingKeyPath(this.env);
    const state = key || opts.wait !== undefined ? await this.rawState(handle, workflowId) : undefined;
    const wait = key ? decisionWait(state) : null;
    if (opts.wait !== undefined) {
      const now = waitToken(state);
      if (now !== opts.wait)
        throw new DecisionRefusedError(
          workflowId,
          `it no longer waits on what --wait ${opts.wait} names (${now ? `it now waits on ${now}` : 'it waits on no decision now'}): review it again with \`loopwright review ${workflowId}\` (nothing was sent)`,
        );
    }
    const signature = this.sign(decisionMessage(workflowId, parsed.data, { firstRunId, wait }));
    const decision = signature ? { ...parsed.data, signature } : parsed.data;
    // An update the server admitted but no worker accepted yet can be lost (the run's state was
    // evicted from the server's cache, a workflow task timed out on a busy worker). Resending it
    // with the same update id is safe: a run answers one update id once. So: try, and when there
    // is no answer in time, look in the record, then send it again, until DECIDE_TIMEOUT_MS.
    const deadline = Date.now() + DECIDE_TIMEOUT_MS;
    for (;;) {
      try {
        const attempt = Math.min(deadline, Date.now() + DECIDE_ATTEMPT_MS);
        return await this.connection.withDeadline(attempt, () =>
          handle.executeUpdate(decisionUpdate, { args: [decision], updateId: decision.id }),
        );
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError)
          throw new DecisionRefusedError(workflowId, err.cause?.message ?? err.message);
        const lost = err instanceof WorkflowNotFoundError || (isGrpcServiceError(err) && err.code === 5);
        const late =
          err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || (isGrpcServiceError(err) && err.code === 4);
        if (!lost && !late) throw this.translate(err, workflowId);
        const now = await this.describe(handle);
        // The run ended meanwhile (this decision or another ended it): its closed record, read
        // from history, says which. A running run's live state is not asked: a worker may answer
        // a query from a workflow task that the server then refuses (its decision never applied),
        // and the same update id sent again gets the durable answer.
        if (now.status.name !== 'RUNNING') {
          const entry = (await this.status(workflowId).catch(() => undefined))?.decisions.find(
            (d) => d.id === decision.id,
          );
          if (entry?.status === 'applied') return entry;
          throw new DecisionRefusedError(workflowId, `the run has ended (${endedState(now)})`);
        }
        if (Date.now() >= deadline) {
          throw new LoopwrightError(
            `run ${workflowId} did not answer decision ${decision.id} within ${DECIDE_TIMEOUT_MS / 1000} s (its workers are busy or gone): it is applied only if a worker takes it later; see \`loopwright status ${workflowId}\``,
          );
        }
      }
    }
  }

  /**
   * True when some worker has polled the task queue for workflow tasks recently. A queue seen
   * polled is believed for {@link WORKER_SEEN_MS} without asking again, so a client deciding many
   * runs at once (a person approving a batch, a script) asks the server once, not per run; the
   * server's own poller list is older than that anyway, and a worker lost meanwhile is caught by
   * the update's deadline (see decide).
   */
  private async hasWorker(taskQueue: string): Promise<boolean> {
    const seen = this.workerSeen.get(taskQueue);
    if (seen !== undefined && Date.now() - seen < WORKER_SEEN_MS) return true;
    try {
      const { pollers } = await this.temporal.workflowService.describeTaskQueue({
        namespace: this.config.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: 1,
      });
      if ((pollers ?? []).length === 0) return false;
      this.workerSeen.set(taskQueue, Date.now());
      return true;
    } catch {
      return true; // Cannot tell: let the update's own deadline answer.
    }
  }

  /** Runs, newest first, filtered by state and loop through the search attributes. */
  async list(
    filter: { state?: string; loop?: string; limit?: number; needsAudit?: boolean } = {},
  ): Promise<RunSummary[]> {
    if (filter.state && !RUN_STATES.includes(filter.state as RunState)) {
      throw new UsageError(`unknown state "${filter.state}": use one of ${RUN_STATES.join(', ')}`);
    }
    const query = allOf(
      oneOf('WorkflowType', LOOP_RUN_TYPES),
      filter.state !== undefined && clause('LoopState', filter.state),
      filter.loop !== undefined && clause('LoopName', filter.loop),
      filter.needsAudit === true && clause('LoopAudit', 'needed'),
    );
    const rows: RunSummary[] = [];
    try {
      for await (const wf of this.temporal.workflow.list({ query })) {
        const sa = wf.typedSearchAttributes;
        rows.push({
          workflowId: wf.workflowId,
          loop: sa.get(LoopName) ?? null,
          state: (sa.get(LoopState) as RunState | undefined) ?? null,
          attempt: sa.get(LoopAttempt) ?? null,
          costUsd: sa.get(LoopCostUsd) ?? null,
          tokens: sa.get(LoopTokens) ?? null,
          status: wf.status.name,
          startTime: wf.startTime.toISOString(),
          closeTime: wf.closeTime?.toISOString() ?? null,
        });
        if (rows.length >= (filter.limit ?? 50)) break;
      }
    } catch (err) {
      throw this.translate(err);
    }
    return rows;
  }

  /** Cancels a run; it ends `canceled` with its record intact, which this returns. */
  async cancel(workflowId: string): Promise<RunRecord> {
    const handle = this.handle(workflowId);
    const description = await this.describe(handle);
    if (description.status.name !== 'RUNNING')
      throw new UsageError(`run ${escapeLine(workflowId)} has already ended (${endedState(description)})`);
    await handle.cancel();
    return handle.result();
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  /** A running run's state as its query answers it (a loop run's or an improvement's record, unredacted). */
  private async rawState(handle: WorkflowHandle, workflowId: string): Promise<unknown> {
    try {
      return await this.connection.withDeadline(Date.now() + 10_000, () => handle.query(stateQuery));
    } catch (err) {
      throw new NoWorkerError(workflowId, 'running', (err as Error).message);
    }
  }

  private handle(workflowId: string): WorkflowHandle<typeof loopWorkflowV2> {
    return this.temporal.workflow.getHandle<typeof loopWorkflowV2>(workflowId);
  }

  private async describe(handle: WorkflowHandle) {
    try {
      return await handle.describe();
    } catch (err) {
      throw this.translate(err, handle.workflowId);
    }
  }

  /** `fn`, with a Temporal error it throws translated (see {@link translate}). */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.translate(err);
    }
  }

  /** A Temporal error as a one-line LoopwrightError (client/service-errors.ts); an unknown id is a RunNotFoundError. */
  private translate(err: unknown, workflowId?: string): unknown {
    if (err instanceof WorkflowNotFoundError && workflowId) return new RunNotFoundError(workflowId);
    return serviceError(err, { address: this.config.temporalAddress, namespace: this.config.namespace }) ?? err;
  }
}

/** True when a run's autonomy needs an operator's grant (as the loop's definition on this side says). */
function needsGrant(plan: LoopInput): boolean {
  const commits = (plan.spec.delivery?.effects ?? []).some((e) => e.kind === 'git_commit');
  return (
    levelNeedingGrant(plan.spec.autonomy, commits, BUILT_IN_LOOPS.get(plan.loop)?.ungrantedAutonomy ?? 'L2') !== null
  );
}

/**
 * How a closed run ended, in words: its LoopState when the workflow completed (a canceled or
 * rejected run completes with its record: `canceled`, `rejected`, `budget_exhausted`...), else
 * Temporal's status (`terminated`, `failed`, `timed out`, `continued as new`).
 */
export function endedState(description: {
  status: { name: string };
  typedSearchAttributes: { get(key: typeof LoopState): string | undefined };
}): string {
  const status = description.status.name;
  const state = status === 'COMPLETED' ? description.typedSearchAttributes.get(LoopState) : undefined;
  return state ?? status.toLowerCase().replace(/_/g, ' ');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
