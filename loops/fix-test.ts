import { z } from 'zod';
import { CommandEnvSchema, LoopSpecSchema } from '../common/loop-spec';
import { harnessAgent, type LoopDefinition } from './loop-definition';

/** Input of `fix-test`: a repository, its test command, the failing test, where the fix may go. */
export const FixTestInputSchema = z
  .object({
    repo: z.string().trim().min(1, { message: 'give the path of a git repository' }),
    testCommand: z.string().trim().min(1, { message: 'give the command that runs the tests, e.g. "npm test"' }),
    failingTest: z.string().trim().min(1, { message: 'name the failing test' }),
    allowedPaths: z.array(z.string().trim().min(1)).min(1, { message: 'list the paths the fix may touch, e.g. ["src/", "test/"]' }),
    targetBranch: z.string().trim().min(1).optional(),
    maxAttempts: z.number().int().min(1).max(10).optional(),
    /** L2 (default) waits for approval before committing; L3 commits at once and asks for an audit. */
    autonomy: z.enum(['L2', 'L3']).optional(),
    /** Variables the test command gets in the sandbox, e.g. {"NODE_ENV": "test"} (nothing is inherited from the worker). */
    commandEnv: CommandEnvSchema.optional(),
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
 * Checks are the standard rubric for code changes: the test command passes, and the change
 * policy holds (only allowed paths, no deleted or skipped tests, a regression test added). A
 * verified fix waits for a human's approval, then lands as one commit on the target branch,
 * exactly once (the commit carries its effect key).
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
        tools: ['read_file', 'list_files', 'search', 'write_file', 'edit_file', 'run_command', 'git_diff', 'git_status'],
        maxTurns: 25,
        commandAllowList: [input.testCommand],
        commandTimeout: '5m',
      },
      models: defaults.models,
      checks: [
        { kind: 'command', name: 'tests pass', command: input.testCommand, timeout: '10m' },
        { kind: 'diff', name: 'change policy', allowedPaths: input.allowedPaths, requireRegressionTest: true },
      ],
      budget: { maxAttempts: input.maxAttempts ?? 3 },
      escalation: { timeout: '72h' },
      autonomy: input.autonomy ?? 'L2',
      // L3 (apply at once, audit afterwards) is earned by 50 L2 changes in a row approved as they were.
      ...((input.autonomy ?? 'L2') === 'L2' ? { promotion: { to: 'L3', consecutive: 50, of: 'approved_unchanged' } } : {}),
      delivery: { effects: [{ kind: 'git_commit', name: 'commit', targetBranch: input.targetBranch, message: `fix: ${input.failingTest}` }] },
      ...(input.commandEnv ? { sandbox: { env: input.commandEnv } } : {}),
    });
    return { task, spec, workspace: input.repo, itemKey: input.failingTest };
  },
};
