import path from 'node:path';
import { z } from 'zod';
import { LoopSpecSchema } from '../common/loop-spec';
import { testKey } from '../common/test-key';
import { harnessAgent, type LoopDefinition } from './loop-definition';

const repo = z.string().trim().min(1, { message: 'give the path of the repository' });
const testCommand = z.string().trim().min(1, { message: 'give the command that runs the tests, e.g. "npm test"' });
const reportDir = z.string().trim().min(1).optional();

/** Input of one `ci-triage` run: a repository, its test command and one failing test. */
const maxPendingReviews = z.number().int().positive().optional();
export const CiTriageInputSchema = z
  .object({
    repo,
    testCommand,
    failingTest: z.string().trim().min(1, { message: 'name the failing test' }),
    reportDir,
    maxPendingReviews,
  })
  .strict();
export type CiTriageInput = z.infer<typeof CiTriageInputSchema>;

/**
 * Input of the ci-triage discovery (`loopwright discover ci-triage`): the repository and its test
 * command; every failing test becomes one run. `fanOut` caps the starts in flight (default 4);
 * `maxPendingReviews` holds new runs back while that many of the loop's runs wait for a human.
 */
export const CiTriageDiscoveryInputSchema = z
  .object({ repo, testCommand, reportDir, fanOut: z.number().int().min(1).max(64).optional(), maxPendingReviews })
  .strict();
export type CiTriageDiscoveryInput = z.infer<typeof CiTriageDiscoveryInputSchema>;

/** The judge's rubric for a diagnosis. */
export const CI_TRIAGE_RUBRIC = [
  'names the failing test',
  'gives a likely cause',
  'cites evidence as path:line',
  'suggests a fix',
];

const SYSTEM_PROMPT = [
  'You diagnose failing tests in a software repository, using read-only tools inside it. Paths are relative to the repository root.',
  'Read the test and the code it exercises. Do not change anything: you cannot, and you are not asked to.',
  'When you are done, answer without calling a tool: a diagnosis in Markdown that names the failing test, gives the likely cause,',
  'cites its evidence as path:line (for example src/math.js:3, lines you have read), and suggests a fix.',
].join('\n');

/**
 * `ci-triage` (L1): the agent reads a repository to diagnose one failing test and writes a
 * report; it changes nothing. Checks: every `path:line` it cites exists and the test really
 * fails in a fresh run (citations), and a judge on the rubric. The verified diagnosis is
 * delivered as `<reportDir>/<test key>.md` (default `<repo>/.loopwright/reports`) with an index.
 */
export const ciTriage: LoopDefinition<CiTriageInput> = {
  name: 'ci-triage',
  description:
    'Diagnose a failing test by reading the code; deliver a cited report (L1). Discovery: one run per failing test.',
  example: { repo: '.', testCommand: 'node --test', failingTest: 'add adds two numbers' },
  inputSchema: CiTriageInputSchema,
  harness: { systemPrompt: SYSTEM_PROMPT, knowledge: {}, toolDescriptions: {} },
  discoveryInputSchema: CiTriageDiscoveryInputSchema,
  plan(input, defaults) {
    const task = [
      `The test ${input.failingTest} fails when ${input.testCommand} runs.`,
      'Find the likely cause by reading the code; do not change anything.',
      'Write a diagnosis in Markdown that cites its evidence as path:line.',
    ].join(' ');
    const spec = LoopSpecSchema.parse({
      name: 'ci-triage',
      version: '1',
      description: this.description,
      agent: {
        ...harnessAgent(defaults.harness),
        maxTokens: 4096,
        tools: ['read_file', 'list_files', 'search'],
        maxTurns: 20,
      },
      models: defaults.models,
      checks: [
        {
          kind: 'citations',
          name: 'citations',
          testName: input.failingTest,
          testCommand: input.testCommand,
          timeout: '10m',
        },
        { kind: 'judge', name: 'judge', rubric: CI_TRIAGE_RUBRIC },
      ],
      budget: { maxAttempts: 3 },
      escalation: { timeout: '72h' },
      autonomy: 'L1',
      // L2 is earned by 50 reports in a row that people audited and found correct (raise auditSample to get audits).
      promotion: { to: 'L2', consecutive: 50, of: 'audited_ok' },
      ...(input.maxPendingReviews ? { maxPendingReviews: input.maxPendingReviews } : {}),
      delivery: {
        effects: [
          {
            kind: 'report',
            name: 'report',
            title: `ci-triage: ${input.failingTest}`,
            ...(input.reportDir ? { dir: path.resolve(input.repo, input.reportDir) } : {}),
          },
        ],
        // The L1 delivery also keeps the story of how the triage was reached, whatever the outcome.
        trace: input.reportDir ? { dir: path.resolve(input.repo, input.reportDir, 'traces') } : {},
      },
    });
    return { task, spec, workspace: input.repo, itemKey: testKey(input.failingTest) };
  },
};
