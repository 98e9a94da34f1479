import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { AutomatedCheck, ModelTimeouts } from '../common/loop-spec';
import type { ModelPrice } from '../common/pricing';
import { renderWorkerPrompt, type FeedbackEntry } from '../common/prompts';
import type { Verdict } from '../common/run-record';
import type { Usage } from '../common/usage';
import type { SessionSetup, TurnResult } from '../common/agent';
import type { Autonomy } from '../common/loop-spec';
import type { LoopInput } from '../common/loop-input';
import { loopwrightHome } from '../server/paths';
import type { SandboxName } from '../common/run-record';
import type { Trust } from '../common/trust';
import { keyRingFromEnv, type KeyRing } from '../crypto/keyring';
import { allOf, clause, oneOf } from '../common/visibility-query';
import { LOOP_RUN_TYPES } from '../workflows/loop/loop-workflow';
import { FailureType, nonRetryableFailure } from '../common/failure-types';
import type { Harness } from '../common/improve/types';
import { getLoop } from '../loops';
import { runCommandCheck } from './checks/command';
import { judgeCandidate, type JudgeInput } from './checks/judge';
import { runSchemaCheck } from './checks/schema';
import { runDiffPolicyCheck } from './checks/diff-policy';
import { runCitationsCheck } from './checks/citations';
import { runTestsCheck } from './checks/tests';
import { createDiscoveryActivities } from './discovery';
import { writeReport, type WriteReportInput, type WriteReportResult } from './reports';
import { writeTraceReport, type TraceReportInput } from './trace-report';
import {
  mineRecentFailures,
  planEvaluationRun,
  proposeChange,
  publishApproved,
  readHarnessStore,
  type ProposeInput,
  type ProposeResult,
} from './improve';
import { currentActivityContext } from './activity-context';
import { defaultWorkspace } from './checks/workspace';
import { publishRefusal, type PublishClaim } from './publish-check';
import { continuedFromRefusal, evaluationParentRefusal, type ContinuedFrom, type ParentRun } from './run-origin';
import { checkStoreRequest, type StoreRequestCheck, type StoreRequestCheckInput } from './store-request';
import { createModelCaller } from './model';
import type { ModelClient } from './model-port';
import { heartbeatAlive } from './model-heartbeat';
import { modelTurn, type ModelTurnInput } from './agent/model-turn';
import { runTool, type RunToolInput, type RunToolResult } from './agent/run-tool';
import { commitWorkspace, prepareWorkspace } from './agent/workspace';
import { applyGitCommit, type GitCommitEffectInput, type GitCommitEffectResult } from './effects';
import { createToolRegistry } from './tools/registry';
import { createFileLedger, type ToolLedger } from './tools/ledger';
import type { Tool } from './tools/types';
import { createFileBlobStore, type BlobStore } from './transcript/store';
import { createSandbox, sandboxConfigFromEnv, SandboxUnavailableError, type Sandbox } from './sandbox/sandbox';
import {
  checkSigner,
  loadTrust,
  trustPathsFromEnv,
  type CheckSignerInput,
  type LoadTrustInput,
  type TrustPaths,
} from './trust';

export interface ActivityDeps {
  /** The model provider's adapter behind the model port (`createModelClient(env)`, activities/providers). */
  model: ModelClient;
  /** Where transcripts live (default LOOPWRIGHT_TRANSCRIPTS or .loopwright/transcripts, sealed with `keys`); shared by all workers. */
  store?: BlobStore;
  /**
   * The operator's key ring (default: the one LOOPWRIGHT_KEYS of `env` names; none when unset).
   * The default transcript store and the reports written outside the workspace are sealed with it
   * (see transcript/store.ts, report-file.ts).
   */
  keys?: KeyRing;
  /** The loop's own tools, next to the built-in ones. */
  tools?: Tool[];
  /** Where L2 runs get their own git repositories (default LOOPWRIGHT_WORKTREES or .loopwright/worktrees). */
  worktreesDir?: string;
  /** Where the activities read models and prices (LOOPWRIGHT_*_MODEL, LOOPWRIGHT_PRICES), the transcript folder and the key ring (LOOPWRIGHT_TRANSCRIPTS, LOOPWRIGHT_KEYS); default process.env. */
  env?: Record<string, string | undefined>;
  /** Where the worker's allowed signers and autonomy grants are (default: LOOPWRIGHT_ALLOWED_SIGNERS, LOOPWRIGHT_GRANTS, see activities/trust.ts). */
  trust?: () => TrustPaths;
  /** Where commands the agent wrote or chose run (default: the sandbox LOOPWRIGHT_SANDBOX selects, see activities/sandbox). */
  sandbox?: Sandbox;
  /** What tool calls did, by idempotency key (default: `tool-ledger` beside the transcript folder, sealed with `keys`). */
  ledger?: ToolLedger;
}

export interface GenerateCandidateInput {
  workflowId: string;
  attempt: number;
  model: string;
  price: ModelPrice;
  systemPrompt: string;
  task: string;
  feedback: FeedbackEntry[];
  /** max_tokens, as the run's budget allows. */
  maxTokens: number;
  /** The call's total deadline and idle timeout (the loop's `models.timeouts`). */
  timeouts?: ModelTimeouts;
}

export interface GenerateCandidateResult {
  candidate: string;
  stopReason: string | null;
  usage: Usage;
}

export interface RunCheckInput {
  workflowId: string;
  attempt: number;
  check: Exclude<AutomatedCheck, { kind: 'judge' }>;
  task: string;
  candidate: string;
  workspace?: string;
  /** The commit the run's changes are compared with (diff policy, tests). */
  baseRef?: string | null;
  /** The attempt's commit on the run's branch (tests): what would land. */
  commit?: string | null;
  /** True when the workspace is the run's own worktree (created for it, so whatever is in it came from the run). */
  isolated?: boolean;
  /** What the loop declares for its commands' environment (`spec.sandbox.env`). */
  env?: Record<string, string>;
  /** Give a command check the candidate in a file (default true; false for loops whose agent runs commands). */
  withCandidate?: boolean;
}

/** The one-line refusal of a worker without a working sandbox, as a non-retryable activity failure. */
function sandboxFailure(err: unknown): unknown {
  return err instanceof SandboxUnavailableError
    ? nonRetryableFailure(FailureType.SandboxUnavailable, err.message)
    : err;
}

/**
 * The activities of a Loopwright worker, built from their dependencies so tests can point
 * them at a scripted model server. Model errors surface as ApplicationFailures typed
 * `ModelRetryableError` / `ModelRequestError` whose details carry any usage the provider
 * reported (see model-errors.ts); the workflow charges it and decides whether to retry.
 */
export function createActivities(deps: ActivityDeps) {
  const callModel = createModelCaller({ client: deps.model });
  const env = deps.env ?? process.env;
  const keys = deps.keys ?? keyRingFromEnv(env);
  const store =
    deps.store ??
    createFileBlobStore(env.LOOPWRIGHT_TRANSCRIPTS || path.join(loopwrightHome(), 'transcripts'), { keys });
  const registry = createToolRegistry(deps.tools ?? []);
  // Beside the transcript store, on the worker's disk (never in a workspace or the sandbox).
  const ledger =
    deps.ledger ??
    createFileLedger(
      path.join(path.dirname(env.LOOPWRIGHT_TRANSCRIPTS || path.join(loopwrightHome(), 'transcripts')), 'tool-ledger'),
      keys,
    );
  const worktreesDir =
    deps.worktreesDir ?? (process.env.LOOPWRIGHT_WORKTREES || path.join(loopwrightHome(), 'worktrees'));
  const sandbox = deps.sandbox ?? createSandbox(sandboxConfigFromEnv(deps.env ?? process.env));
  /** The sandbox's name, or the one-line refusal when there is none and nobody opted out. */
  const requireSandbox = async (): Promise<SandboxName> => {
    const st = await sandbox.status();
    if (st.kind === 'unavailable') throw sandboxFailure(new SandboxUnavailableError(st.reason, st.fix));
    return st.kind === 'bwrap' ? 'bwrap' : 'none';
  };
  return withHeartbeats({
    ...createDiscoveryActivities(deps.env ?? process.env, sandbox),

    /**
     * Writes a verified run's report and the reports index, exactly once per key (see reports.ts).
     * Reports are the L1 delivery: the workflow applies them at every autonomy level. With a key
     * ring, a report folder outside the run's workspace holds them sealed (report-file.ts).
     */
    async writeReport(input: WriteReportInput): Promise<WriteReportResult> {
      return writeReport(input, keys);
    },

    /** Improvement loop (see improve.ts): mining, the store, the proposer, evaluation plans, publishing. */
    mineRecentFailures,
    readHarnessStore,
    async proposeChange(input: ProposeInput): Promise<ProposeResult> {
      return proposeChange(callModel, input);
    },
    async planEvaluationRun(input: Parameters<typeof planEvaluationRun>[1]): Promise<LoopInput> {
      return planEvaluationRun(deps.env ?? process.env, input);
    },
    publishApproved,

    /** A loop's built-in harness as this worker's definition has it (v1 of a new harness store). */
    async builtInHarness(input: { loop: string }): Promise<Harness> {
      return getLoop(input.loop).harness;
    },

    /** Why a harness store refuses a `publish` (not an approved improvement's candidate), or null (see publish-check.ts). */
    async publishRefusal(claim: PublishClaim): Promise<string | null> {
      return publishRefusal(claim);
    },

    /** Why a run that says it is an evaluation is refused (its parent is no improvement of this deployment), or null (see run-origin.ts). */
    async evaluationParentRefusal(parent: ParentRun | undefined): Promise<string | null> {
      return evaluationParentRefusal(parent);
    },

    /** Why a run that continued as new is refused (the run before it was no run of this deployment's), or null (see run-origin.ts). */
    async continuedFromRefusal(from: ContinuedFrom): Promise<string | null> {
      return continuedFromRefusal(from);
    },

    /** Writes the run's trace as a Markdown report as the run ends (see trace-report.ts); sealed like reports. */
    async writeTraceReport(input: TraceReportInput): Promise<{ path: string }> {
      return writeTraceReport(Context.current().client, input, keys);
    },

    /**
     * Fixes where a run's agent works and which tools it has, once per run: the tool classes
     * (for the autonomy gate) and the workspace (an L2 run gets its own git worktree and branch).
     * An unknown tool or an unusable workspace is a non-retryable `WorkspaceError`. A loop that
     * runs commands (`runsCommands`) needs the sandbox: without one (and no opt-out) the run is
     * refused with a non-retryable `SandboxUnavailable`; with one, its name is returned.
     */
    async prepareSession(input: {
      workflowId: string;
      workspace: string;
      autonomy: Autonomy;
      isolate?: boolean;
      tools: string[];
      runsCommands?: boolean;
    }): Promise<SessionSetup> {
      const unknown = input.tools.filter((t) => !registry.get(t));
      if (unknown.length) {
        throw nonRetryableFailure(
          FailureType.Workspace,
          `unknown tools ${unknown.join(', ')}: this worker has ${registry.names().join(', ')}`,
        );
      }
      const ran = input.runsCommands ? await requireSandbox() : undefined;
      const where = await prepareWorkspace(worktreesDir, input);
      return {
        ...where,
        tools: input.tools.map((name) => ({ name, class: registry.classOf(name)! })),
        ...(ran ? { sandbox: ran } : {}),
      };
    },

    /**
     * For a loop that runs commands but gives its agent no tools (command checks only): the
     * name of the sandbox they will run in, or the non-retryable `SandboxUnavailable` refusal.
     */
    async checkSandbox(): Promise<SandboxName> {
      return requireSandbox();
    },

    /** One model turn of an agent session (see agent/model-turn.ts); the conversation stays in the store. */
    async modelTurn(input: ModelTurnInput): Promise<TurnResult> {
      return modelTurn({ store, callModel, definitions: (names) => registry.definitions(names) }, input);
    },

    /** One tool call, confined to the workspace and gated by the autonomy level (see agent/run-tool.ts). */
    async runTool(input: RunToolInput): Promise<RunToolResult> {
      return runTool({ store, registry, sandbox, ledger }, input);
    },

    /**
     * Applies one effect exactly once (see effects.ts): its key is looked up on the target
     * before anything is done. Conflicts are a non-retryable `EffectError`.
     */
    async applyEffect(input: GitCommitEffectInput): Promise<GitCommitEffectResult> {
      return applyGitCommit(input, worktreesDir);
    },

    /** What a run trusts, read from the worker's files as it starts: allowed signers, signed decisions, its autonomy grant. */
    async loadTrust(input: LoadTrustInput): Promise<Trust> {
      return loadTrust(deps.trust ?? (() => trustPathsFromEnv(deps.env ?? process.env)), input);
    },

    /** Whether a verified decision's key is still in the worker's allowed signers (see activities/trust.ts checkSigner). */
    async checkSigner(input: CheckSignerInput): Promise<{ ok: true } | { ok: false; reason: string }> {
      return checkSigner(deps.trust ?? (() => trustPathsFromEnv(deps.env ?? process.env)), input);
    },

    /** Who a harness store's rollback or regression-add comes from, against the allowed signers now (see store-request.ts). */
    async checkStoreRequest(input: StoreRequestCheckInput): Promise<StoreRequestCheck> {
      return checkStoreRequest(deps.trust ?? (() => trustPathsFromEnv(deps.env ?? process.env)), input);
    },

    /**
     * How many of a loop's runs wait for a human now (verification debt), from the visibility
     * store: the runs of this deployment (its task queue) only, as the people who review them are.
     */
    async countPendingReviews(input: { loop: string }): Promise<number> {
      const query = allOf(
        oneOf('WorkflowType', LOOP_RUN_TYPES),
        clause('TaskQueue', Context.current().info.taskQueue),
        clause('ExecutionStatus', 'Running'),
        clause('LoopName', input.loop),
        clause('LoopState', 'awaiting_human'),
      );
      const { count } = await Context.current().client.workflow.count(query);
      return count;
    },

    /** Commits an L2 attempt's changes onto the run's branch. */
    async commitWorkspace(input: {
      root: string;
      branch: string;
      message: string;
    }): Promise<{ commit: string | null }> {
      return commitWorkspace(input);
    },

    /**
     * One worker turn: the task plus the feedback of every earlier attempt, answered by the
     * worker model. Its usage (tokens and cost at the pinned price) is charged by the workflow.
     */
    async generateCandidate(input: GenerateCandidateInput): Promise<GenerateCandidateResult> {
      const reply = await callModel({
        role: 'worker',
        model: input.model,
        price: input.price,
        workflowId: input.workflowId,
        attempt: input.attempt,
        system: input.systemPrompt,
        messages: [{ role: 'user', content: renderWorkerPrompt(input.task, input.feedback) }],
        maxTokens: input.maxTokens,
        timeouts: input.timeouts,
      });
      return { candidate: reply.text, stopReason: reply.stopReason, usage: reply.usage };
    },

    /** The LLM judge on one candidate, in a fresh context; fails closed (see checks/judge.ts). */
    async judgeCandidate(input: JudgeInput): Promise<Verdict> {
      return judgeCandidate(callModel, input);
    },

    /** A check that needs no model: a command in the run's workspace, a JSON Schema, the change policy, citations. */
    async runCheck(input: RunCheckInput): Promise<Verdict> {
      switch (input.check.kind) {
        case 'command':
          return runCommandCheck(
            {
              ...input,
              check: input.check,
              workspace:
                input.workspace ??
                defaultWorkspace(input.workflowId, currentActivityContext()?.info.workflowExecution?.runId),
            },
            sandbox,
          ).catch((err: unknown) => {
            throw sandboxFailure(err);
          });
        case 'schema':
          return runSchemaCheck(input.check, input.candidate);
        case 'diff':
          if (!input.workspace || !input.baseRef) {
            throw nonRetryableFailure(
              FailureType.Workspace,
              `check ${input.check.name} needs a git workspace and the commit the run started from`,
            );
          }
          return runDiffPolicyCheck({
            check: input.check,
            root: input.workspace,
            baseRef: input.baseRef,
            isolated: input.isolated,
          });
        case 'tests':
          if (!input.workspace || !input.baseRef) {
            throw nonRetryableFailure(
              FailureType.Workspace,
              `check ${input.check.name} needs a git workspace and the commit the run started from`,
            );
          }
          return runTestsCheck(
            {
              workflowId: input.workflowId,
              attempt: input.attempt,
              check: input.check,
              root: input.workspace,
              baseRef: input.baseRef,
              commit: input.commit,
              env: input.env,
            },
            sandbox,
            keys,
          ).catch((err: unknown) => {
            throw sandboxFailure(err);
          });
        case 'citations':
          if (!input.workspace) {
            throw nonRetryableFailure(
              FailureType.Workspace,
              `check ${input.check.name} needs the run's workspace (the repository it cites)`,
            );
          }
          return runCitationsCheck(
            { check: input.check, candidate: input.candidate, workspace: input.workspace, env: input.env },
            sandbox,
          ).catch((err: unknown) => {
            throw sandboxFailure(err);
          });
      }
    },
  });
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * Every activity heartbeats once a second while it runs (Temporal throttles what it sends):
 * the workflows give activities a 10 s heartbeat timeout so a lost worker is noticed quickly,
 * and a long git operation, test run or search must not look like one.
 */
function withHeartbeats<T extends Record<string, (...args: never[]) => Promise<unknown>>>(activities: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      let beat: NodeJS.Timeout | undefined;
      try {
        const ctx = Context.current();
        // Repeats the details the activity recorded (a model call's usage): a bare heartbeat would erase them.
        beat = setInterval(() => heartbeatAlive(ctx), 1000);
      } catch {
        // not inside an activity (a unit test calling the function directly)
      }
      try {
        return await fn(...args);
      } finally {
        if (beat) clearInterval(beat);
      }
    };
  }
  return wrapped as T;
}
