import { ConfigError } from '../../common/errors';
import {
  DEFAULT_MAX_CACHED_WORKFLOWS,
  TUNING_OPTIONS,
  tuningLine,
  withTuningFlags,
  workerTuning,
} from '../../workers/tuning';

describe('worker tuning (flags and environment)', () => {
  test('by default only the sticky cache is capped; the rest keeps Temporal defaults', () => {
    expect(workerTuning({})).toEqual({ maxCachedWorkflows: DEFAULT_MAX_CACHED_WORKFLOWS });
    expect(tuningLine(workerTuning({}))).toBe(
      `tuning: max-cached-workflows ${DEFAULT_MAX_CACHED_WORKFLOWS}, workflow-slots default, activity-slots default, workflow-pollers default, activity-pollers default`,
    );
  });

  test('every option is read from its environment variable, and a flag wins over it', () => {
    const env = Object.fromEntries(TUNING_OPTIONS.map((o) => [o.env, '7']));
    expect(workerTuning(env)).toEqual({
      maxCachedWorkflows: 7,
      maxConcurrentWorkflowTaskExecutions: 7,
      maxConcurrentActivityTaskExecutions: 7,
      maxConcurrentWorkflowTaskPolls: 7,
      maxConcurrentActivityTaskPolls: 7,
    });
    const flagged = withTuningFlags(env, { maxCachedWorkflows: '0', workflowSlots: '20', other: 'x' });
    expect(workerTuning(flagged)).toMatchObject({
      maxCachedWorkflows: 0,
      maxConcurrentWorkflowTaskExecutions: 20,
      maxConcurrentWorkflowTaskPolls: 7,
    });
    expect(flagged.other).toBeUndefined();
  });

  test.each([
    [
      'LOOPWRIGHT_MAX_CACHED_WORKFLOWS',
      '-1',
      /--max-cached-workflows \/ LOOPWRIGHT_MAX_CACHED_WORKFLOWS must be a whole number of at least 0, not "-1"/,
    ],
    ['LOOPWRIGHT_MAX_CACHED_WORKFLOWS', '1.5', /whole number/],
    ['LOOPWRIGHT_WORKFLOW_SLOTS', '1', /--workflow-slots .* at least 2/],
    ['LOOPWRIGHT_ACTIVITY_SLOTS', 'many', /--activity-slots .* not "many"/],
    ['LOOPWRIGHT_ACTIVITY_POLLERS', '1e3', /whole number/],
    ['LOOPWRIGHT_WORKFLOW_POLLERS', '99999999999', /whole number/],
  ])('%s=%s is a ConfigError naming the flag and the variable', (name, value, message) => {
    expect(() => workerTuning({ [name]: value })).toThrow(ConfigError);
    expect(() => workerTuning({ [name]: value })).toThrow(message);
  });

  test('pollers above their slots are refused with what to change', () => {
    expect(() => workerTuning({ LOOPWRIGHT_WORKFLOW_SLOTS: '4', LOOPWRIGHT_WORKFLOW_POLLERS: '8' })).toThrow(
      'workflow pollers (8) cannot exceed workflow slots (4): lower --workflow-pollers or raise --workflow-slots',
    );
    expect(() => workerTuning({ LOOPWRIGHT_ACTIVITY_POLLERS: '101' })).toThrow(
      'activity pollers (101) cannot exceed activity slots (100)',
    );
  });
});
