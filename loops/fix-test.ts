import { z } from 'zod';
import { CommandEnvSchema, LoopSpecSchema } from '../common/loop-spec';
import { FIX_TEST_REVIEW_RUBRIC } from '../common/code-review';
import { TEST_RUNNERS } from '../common/test-results';
import { harnessAgent, type LoopDefinition } from './loop-definition';

/** Input of `fix-test`: a repository, its test command, the failing test, where the fix may go. */
export const FixTestInputSchema = z
  .object({
    repo: z.string().trim().min(1, { message: 'give the path of a git repository' }),
    testCommand: z.string().trim().min(1, { message: 'give the command that runs the tests, e.g. "npm test"' }),
    failingTest: z.string().trim().min(1, { message: 'name the failing test' }),
    allowedPaths: z
      .array(z.string().trim().min(1))
      .min(1, { message: 'list the paths the fix may touch, e.g. ["src/", "test/"]' }),
    targetBranch: z.string().trim().min(1).optional(),
    maxAttempts: z.number().int().min(1).max(10).optional(),
    /** L2 (default) waits for approval before committing; L3 commits at once and asks for an audit. */
    autonomy: z.enum(['L2', 'L3']).optional(),
    /** Variables the test command gets in the sandbox, e.g. {"NODE_ENV": "test"} (nothing is inherited from the worker). */
    commandEnv: CommandEnvSchema.optional(),
    /** The test runner (node, jest, vitest, pytest, go, junit); detected from testCommand when absent. */
    testRunner: z.enum(TEST_RUNNERS).optional(),
    /** With testRunner "junit": where the runner writes JUnit XML (a file or folder, relative to the repository). */
    junitPath: z.string().trim().min(1).optional(),
    /**
     * Tests the agent never sees, run only by the gate: an absolute folder on the worker outside
     * the repository, copied into the clean checkout at `into` (default test/held-out).
     */
    /** A change to existing tests, helpers, fixtures or runner config: fail the attempt (default), or send it to a person's review. */
    testChanges: z.enum(['fail', 'human']).optional(),
    heldOutTests: z
      .object({
        dir: z.string().trim().min(1),
        into: z.string().trim().min(1).optional(),
        command: z.string().trim().min(1).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type FixTestInput = z.infer<typeof FixTestInputSchema>;

const SYSTEM_PROMPT = [
  'You fix bugs in a software repository, working with tools inside it. Paths are relative to the repository root.',
  'Find the cause of the failing test, fix the code, and add a regression test that fails without your fix.',
  'Never delete, skip or weaken a test. Change only the allowed paths. Run the tests before you finish.',
  'When you are done, answer without calling a tool: the cause in one sentence, then what you changed.',
].join('\n');

/**
 * `fix-test` (L2): the agent fixes a failing test on its own branch in an isolated worktree.
 * The gate, on clean checkouts of the attempt's commit: the `tests` check (by test identity:
 * the named test passes as base wrote it, everything that passed at base still passes, a real
 * regression test was added, held-out tests pass) and the change policy (only allowed paths,
 * existing test infrastructure only added to, no stray ignored files). A verified fix waits
 * for a human's approval, then lands as one commit on the target branch, exactly once (the
 * commit carries its effect key).
 */
export const fixTest: LoopDefinition<FixTestInput> = {
  name: 'fix-test',
  description: 'Fix a failing test on a branch; after approval, commit the fix (L2).',
  example: { repo: '.', testCommand: 'npm test', failingTest: 'add adds two numbers', allowedPaths: ['src/', 'test/'] },
  inputSchema: FixTestInputSchema,
  harness: { systemPrompt: SYSTEM_PROMPT, knowledge: {}, toolDescriptions: {} },
  plan(input, defaults) {
    const task = [
      `The test "${input.failingTest}" fails when \`${input.testCommand}\` runs in this repository.`,
      `Find the cause and fix it. Add a regression test. You may change only: ${input.allowedPaths.join(', ')}.`,
      `Run the tests with run_command ("${input.testCommand}") before you finish.`,
    ].join('\n');
    const spec = LoopSpecSchema.parse({
      name: 'fix-test',
      version: '1',
      description: this.description,
      agent: {
        ...harnessAgent(defaults.harness),
        maxTokens: 8192,
        tools: [
          'read_file',
          'list_files',
          'search',
          'write_file',
          'edit_file',
          'run_command',
          'git_diff',
          'git_status',
        ],
        maxTurns: 25,
        commandAllowList: [input.testCommand],
        commandTimeout: '5m',
      },
      models: defaults.models,
      checks: [
        {
          kind: 'tests',
          name: 'tests',
          command: input.testCommand,
          failingTest: input.failingTest,
          requireRegressionTest: true,
          timeout: '10m',
          ...(input.testRunner ? { runner: input.testRunner } : {}),
          ...(input.junitPath ? { junitPath: input.junitPath } : {}),
          ...(input.heldOutTests
            ? {
                heldOut: {
                  dir: input.heldOutTests.dir,
                  ...(input.heldOutTests.into ? { into: input.heldOutTests.into } : {}),
                  ...(input.heldOutTests.command ? { command: input.heldOutTests.command } : {}),
                },
              }
            : {}),
        },
        {
          kind: 'diff',
          name: 'change policy',
          allowedPaths: input.allowedPaths,
          ...(input.testChanges ? { testChanges: input.testChanges } : {}),
        },
        // Last, so that it reads the gate's verdicts beside the diff.
        { kind: 'judge', name: 'code review', rubric: [...FIX_TEST_REVIEW_RUBRIC], subject: 'change' },
      ],
      budget: { maxAttempts: input.maxAttempts ?? 3 },
      escalation: { timeout: '72h' },
      autonomy: input.autonomy ?? 'L2',
      // L3 (apply at once, audit afterwards) is earned by 50 L2 changes in a row approved as they were.
      ...((input.autonomy ?? 'L2') === 'L2'
        ? { promotion: { to: 'L3', consecutive: 50, of: 'approved_unchanged' } }
        : {}),
      delivery: {
        effects: [
          {
            kind: 'git_commit',
            name: 'commit',
            targetBranch: input.targetBranch,
            message: `fix: ${input.failingTest}`,
          },
        ],
      },
      ...(input.commandEnv ? { sandbox: { env: input.commandEnv } } : {}),
    });
    return { task, spec, workspace: input.repo, itemKey: input.failingTest };
  },
};
