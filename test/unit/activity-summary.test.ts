import {
  agentTurnSummary, auditWaitSummary, checkSummary, humanWaitSummary, judgeCallSummary, parseToolCallSummary, parseWaitSummary, toolCallSummary, workerCallSummary,
} from '../../common/activity-summary';

describe('activity summaries', () => {
  it('labels model calls and checks as the Web UI timeline has always shown them', () => {
    expect([workerCallSummary(2, 1), workerCallSummary(2, 3), agentTurnSummary(4, 1, 2), judgeCallSummary('review', 1, 1), checkSummary('tests', 'tests', 3)]).toEqual([
      'claude (worker): attempt 2', 'claude (worker): attempt 2, try 3', 'claude: turn 4 (attempt 1), try 2', 'check review (judge): attempt 1', 'check tests (tests): attempt 3',
    ]);
  });

  it('reads back what a tool call was about, and an empty remainder when it names nothing more', () => {
    expect(parseToolCallSummary(toolCallSummary('read_file', 'src/math.js'), 'read_file')).toBe('src/math.js');
    expect(toolCallSummary('list_files', '')).toBe('tool list_files');
    expect(parseToolCallSummary(toolCallSummary('list_files', ''), 'list_files')).toBe('');
    expect(parseToolCallSummary('something else', 'read_file')).toBe('something else');
  });

  it('tells a human wait (with its reason) from an audit wait and from any other timer', () => {
    expect(parseWaitSummary(humanWaitSummary('budget exhausted: 3/3 attempts'))).toEqual({ kind: 'human', reason: 'budget exhausted: 3/3 attempts' });
    expect(parseWaitSummary(auditWaitSummary())).toEqual({ kind: 'audit' });
    expect(parseWaitSummary('a sleep')).toBeUndefined();
  });

  it('reads the summaries of recorded histories, written before this module', () => {
    expect(parseWaitSummary('wait for a human: verified; approve to apply')).toEqual({ kind: 'human', reason: 'verified; approve to apply' });
    expect(parseWaitSummary('wait for an audit')).toEqual({ kind: 'audit' });
    expect(parseToolCallSummary('tool run_command node --test', 'run_command')).toBe('node --test');
  });
});
