import {
  agentTurnSummary,
  auditWaitSummary,
  checkSummary,
  humanWaitSummary,
  judgeCallSummary,
  parseToolCallSummary,
  parseWaitSummary,
  proposerCallSummary,
  toolCallSummary,
  workerCallSummary,
} from '../../common/activity-summary';

describe('activity summaries', () => {
  it('labels model calls with the role and the model id, and checks by name and kind', () => {
    expect([
      workerCallSummary('claude-sonnet-5-5', 2, 1),
      workerCallSummary('claude-sonnet-5-5', 2, 3),
      agentTurnSummary('claude-sonnet-5-5', 4, 1, 2),
      judgeCallSummary('claude-haiku-5-5', 'review', 1, 1),
      proposerCallSummary('claude-opus-5', 'fix-test'),
      checkSummary('tests', 'tests', 3),
    ]).toEqual([
      'worker claude-sonnet-5-5: attempt 2',
      'worker claude-sonnet-5-5: attempt 2, try 3',
      'worker claude-sonnet-5-5: turn 4 (attempt 1), try 2',
      'checker claude-haiku-5-5: check review (attempt 1)',
      'proposer claude-opus-5: harness change for fix-test',
      'check tests (tests): attempt 3',
    ]);
  });

  it('reads back what a tool call was about, and an empty remainder when it names nothing more', () => {
    expect(parseToolCallSummary(toolCallSummary('read_file', 'src/math.js'), 'read_file')).toBe('src/math.js');
    expect(toolCallSummary('list_files', '')).toBe('tool list_files');
    expect(parseToolCallSummary(toolCallSummary('list_files', ''), 'list_files')).toBe('');
    expect(parseToolCallSummary('something else', 'read_file')).toBe('something else');
  });

  it('tells a human wait (with its reason) from an audit wait and from any other timer', () => {
    expect(parseWaitSummary(humanWaitSummary('budget exhausted: 3/3 attempts'))).toEqual({
      kind: 'human',
      reason: 'budget exhausted: 3/3 attempts',
    });
    expect(parseWaitSummary(auditWaitSummary())).toEqual({ kind: 'audit' });
    expect(parseWaitSummary('a sleep')).toBeUndefined();
  });

  it('reads the summaries of recorded histories, written before this module', () => {
    expect(parseWaitSummary('wait for a human: verified; approve to apply')).toEqual({
      kind: 'human',
      reason: 'verified; approve to apply',
    });
    expect(parseWaitSummary('wait for an audit')).toEqual({ kind: 'audit' });
    expect(parseToolCallSummary('tool run_command node --test', 'run_command')).toBe('node --test');
  });
});
