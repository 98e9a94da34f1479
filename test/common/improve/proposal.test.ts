import { checkProposal, diffHarness, harnessPrompt } from '../../../common/improve/proposal';
import type { Harness, Proposal, ProposedChange } from '../../../common/improve/types';

const current: Harness = {
  systemPrompt: 'You fix failing tests.\nRun the tests first.',
  knowledge: { style: 'Use two spaces.' },
  toolDescriptions: { read_file: 'Reads a file.' },
};
const TOOLS = ['read_file', 'write_file', 'run_command'];
const proposal = (...changes: ProposedChange[]): Proposal => ({
  changes,
  contract: {
    failingRuns: ['fix/1', 'fix/2'],
    occurrences: 4,
    rootCause: 'skips the tests',
    expectedImprovement: 'runs them',
    rollback: 'restore v1',
  },
});

describe('checkProposal', () => {
  test('refuses changes to rubric, budget.maxAttempts, autonomy and checks, listing each path', () => {
    const result = checkProposal(
      proposal(
        { path: 'systemPrompt', value: 'better' },
        { path: 'rubric', value: 'easier' },
        { path: 'budget.maxAttempts', value: '99' },
        { path: 'autonomy', value: 'L3' },
        { path: 'checks', value: '[]' },
      ),
      current,
      TOOLS,
    );
    expect(result).toEqual({
      ok: false,
      outside: ['rubric', 'budget.maxAttempts', 'autonomy', 'checks'],
      refusal:
        'the proposal changes rubric, budget.maxAttempts, autonomy, checks, which are outside the improvable surface (systemPrompt, knowledge.<name>, toolDescriptions.<tool>): refused before evaluation',
    });
  });

  test('refuses a knowledge name with a slash and an empty toolDescriptions path as outside the surface', () => {
    const result = checkProposal(
      proposal({ path: 'knowledge.../etc', value: 'x' }, { path: 'toolDescriptions.', value: 'x' }),
      current,
      TOOLS,
    );
    expect(result).toMatchObject({ ok: false, outside: ['knowledge.../etc', 'toolDescriptions.'] });
  });

  test('refuses describing a tool the loop does not have', () => {
    const result = checkProposal(
      proposal({ path: 'toolDescriptions.delete_repo', value: 'Deletes things.' }),
      current,
      TOOLS,
    );
    expect(result).toEqual({
      ok: false,
      outside: ['toolDescriptions.delete_repo'],
      refusal:
        'the proposal describes delete_repo, which the loop does not have (its tools: read_file, write_file, run_command): refused before evaluation',
    });
  });

  test('refuses duplicate paths, an empty system prompt, an oversized value and a no-op', () => {
    const refusal = (p: Proposal) => {
      const result = checkProposal(p, current, TOOLS);
      return result.ok ? 'accepted' : result.refusal;
    };
    expect(refusal(proposal({ path: 'systemPrompt', value: 'a' }, { path: 'systemPrompt', value: 'b' }))).toMatch(
      /changes systemPrompt more than once/,
    );
    expect(refusal(proposal({ path: 'systemPrompt', value: ' ' }))).toMatch(/empties or removes systemPrompt/);
    expect(refusal(proposal({ path: 'systemPrompt', value: null }))).toMatch(/empties or removes systemPrompt/);
    expect(refusal(proposal({ path: 'knowledge.big', value: 'x'.repeat(50_001) }))).toMatch(
      /knowledge\.big has 50001 characters, over the limit of 50000/,
    );
    expect(
      refusal(
        proposal({ path: 'systemPrompt', value: current.systemPrompt }, { path: 'knowledge.absent', value: null }),
      ),
    ).toMatch(/leaves the harness as it is/);
  });

  test('applies a valid proposal to a new harness, leaves the input alone and lists what changed', () => {
    const before = structuredClone(current);
    const result = checkProposal(
      proposal(
        { path: 'systemPrompt', value: current.systemPrompt },
        { path: 'knowledge.testing', value: 'Run npm test before answering.' },
        { path: 'knowledge.style', value: null },
        { path: 'toolDescriptions.run_command', value: 'Runs a shell command in the workspace.' },
      ),
      current,
      TOOLS,
    );
    expect(result).toEqual({
      ok: true,
      changed: ['knowledge.testing', 'knowledge.style', 'toolDescriptions.run_command'],
      harness: {
        systemPrompt: current.systemPrompt,
        knowledge: { testing: 'Run npm test before answering.' },
        toolDescriptions: { read_file: 'Reads a file.', run_command: 'Runs a shell command in the workspace.' },
      },
    });
    expect(current).toEqual(before);
  });
});

describe('harnessPrompt', () => {
  test('appends knowledge documents in name order after the system prompt', () => {
    expect(
      harnessPrompt({ systemPrompt: 'Base.', knowledge: { zeta: 'Z text', alpha: 'A text' }, toolDescriptions: {} }),
    ).toBe('Base.\n\n## Knowledge: alpha\n\nA text\n\n## Knowledge: zeta\n\nZ text');
    expect(harnessPrompt({ systemPrompt: 'Only.', knowledge: {}, toolDescriptions: {} })).toBe('Only.');
  });
});

describe('diffHarness', () => {
  test('shows changed lines per path, and whole documents added or removed', () => {
    const next: Harness = {
      systemPrompt: 'You fix failing tests.\nRun the whole test suite first.\nThen fix.',
      knowledge: { testing: 'Run npm test.' },
      toolDescriptions: { read_file: 'Reads a file.' },
    };
    expect(diffHarness(current, next)).toEqual([
      '@@ systemPrompt @@',
      '  You fix failing tests.',
      '- Run the tests first.',
      '+ Run the whole test suite first.',
      '+ Then fix.',
      '@@ knowledge.style @@',
      '- Use two spaces.',
      '@@ knowledge.testing @@',
      '+ Run npm test.',
    ]);
    expect(diffHarness(current, current)).toEqual([]);
  });
});
