import { renderWorkerPrompt, type FeedbackEntry } from '../../common/prompts';

const TASK = 'Write a haiku about durable execution.';

const attempt1: FeedbackEntry = {
  kind: 'attempt',
  attempt: 1,
  candidate: 'first candidate',
  failures: [
    {
      check: 'judge',
      reason: 'only two lines',
      failedItems: ['has three lines', 'mentions a crash'],
      requiredCorrection: 'add a third line',
    },
  ],
};
const attempt2: FeedbackEntry = {
  kind: 'attempt',
  attempt: 2,
  candidate: 'second candidate',
  failures: [
    {
      check: 'judge',
      reason: 'no crash mentioned',
      failedItems: ['mentions a crash'],
      requiredCorrection: 'mention a crash',
    },
  ],
};

describe('renderWorkerPrompt', () => {
  test('with no feedback the prompt is the task alone', () => {
    expect(renderWorkerPrompt(TASK, [])).toBe(TASK);
  });

  test('attempt feedback starts with the task and ends asking for the complete new output', () => {
    const prompt = renderWorkerPrompt(TASK, [attempt1]);
    expect(prompt.startsWith(`${TASK}\n`)).toBe(true);
    expect(prompt.trimEnd().endsWith('Answer with the complete new output only.')).toBe(true);
  });

  test('an attempt shows its candidate, the failing check reason, its failed items and the required correction', () => {
    const prompt = renderWorkerPrompt(TASK, [attempt1]);
    expect(prompt).toContain('## Attempt 1\n<previous_output>\nfirst candidate\n</previous_output>');
    expect(prompt).toContain('- check judge failed (failed: has three lines; mentions a crash): only two lines');
    expect(prompt).toContain('required correction: add a third line');
  });

  test('every earlier attempt is listed, in order', () => {
    const prompt = renderWorkerPrompt(TASK, [attempt1, attempt2]);
    const order = [
      '## Attempt 1',
      'first candidate',
      'only two lines',
      'add a third line',
      '## Attempt 2',
      'second candidate',
      'no crash mentioned',
      'mention a crash',
    ];
    const positions = order.map((s) => prompt.indexOf(s));
    expect(positions).not.toContain(-1);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
  });

  test('every failing check of one attempt is listed', () => {
    const twoChecks: FeedbackEntry = {
      ...attempt1,
      failures: [
        { check: 'judge', reason: 'too short', failedItems: [], requiredCorrection: '' },
        { check: 'style', reason: 'too formal', failedItems: ['casual tone'], requiredCorrection: 'relax' },
      ],
    };
    const prompt = renderWorkerPrompt(TASK, [twoChecks]);
    expect(prompt).toContain('- check judge failed: too short');
    expect(prompt).toContain('- check style failed (failed: casual tone): too formal');
    expect(prompt.match(/required correction:/g)).toHaveLength(1);
  });

  test('human guidance appears with the name of the person who gave it, after the attempts before it', () => {
    const prompt = renderWorkerPrompt(TASK, [
      attempt1,
      { kind: 'human', by: 'ana@example.com', guidance: 'Use a 5-7-5 syllable count.' },
    ]);
    expect(prompt).toContain('## Guidance from ana@example.com\nUse a 5-7-5 syllable count.');
    expect(prompt.indexOf('## Guidance from')).toBeGreaterThan(prompt.indexOf('## Attempt 1'));
  });
});
