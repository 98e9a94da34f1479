import { decisionRequest } from '../../../client/commands/decide';
import type { DecisionKind } from '../../../common/decision';
import { UsageError } from '../../../common/errors';
import type { DecideOptions } from '../../../client/commands/decide';

/** The UsageError `decisionRequest` throws (fails the test when it throws nothing or something else). */
function usageErrorOf(kind: DecisionKind, opts: DecideOptions): UsageError {
  try {
    decisionRequest(kind, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error(`expected a UsageError for ${kind} ${JSON.stringify(opts)}, nothing was thrown`);
}

describe('decisionRequest', () => {
  test('approve keeps who and the note', () => {
    expect(decisionRequest('approve', { by: 'ana', note: 'looks right' })).toEqual({
      kind: 'approve',
      by: 'ana',
      note: 'looks right',
    });
  });

  test('reject keeps who and the reason', () => {
    expect(decisionRequest('reject', { by: 'ana', reason: 'off topic' })).toEqual({
      kind: 'reject',
      by: 'ana',
      reason: 'off topic',
    });
  });

  test('--by is trimmed', () => {
    expect(decisionRequest('approve', { by: '  ana  ' })).toMatchObject({ by: 'ana' });
  });

  test('retry keeps the guidance and grants one attempt by default', () => {
    expect(decisionRequest('retry', { by: 'ana', guidance: 'use shorter lines' })).toEqual({
      kind: 'retry',
      by: 'ana',
      guidance: 'use shorter lines',
      attempts: 1,
    });
  });

  test('retry with --attempts 3 grants three', () => {
    expect(decisionRequest('retry', { by: 'ana', guidance: 'g', attempts: '3' })).toMatchObject({ attempts: 3 });
  });

  test('a budget extension keeps every number it is given', () => {
    expect(
      decisionRequest('extend', {
        by: 'ana',
        attempts: '2',
        tokens: '50000',
        cost: '0.25',
        time: '30m',
        note: 'one more go',
      }),
    ).toEqual({
      kind: 'extend',
      by: 'ana',
      attempts: 2,
      tokens: 50_000,
      costUsd: 0.25,
      wallTime: '30m',
      note: 'one more go',
    });
  });

  test('a budget extension of dollars only is valid', () => {
    expect(decisionRequest('extend', { by: 'ana', cost: '1.5' })).toMatchObject({ kind: 'extend', costUsd: 1.5 });
  });

  test.each(['approve', 'reject', 'retry', 'extend'] as const)(
    '%s without --by is a usage error asking for --by',
    (kind) => {
      const err = usageErrorOf(kind, { guidance: 'g', attempts: '1' });
      expect(err.message).toContain('--by');
      expect(err.exitCode).toBe(2);
    },
  );

  test('a blank --by is a usage error too', () => {
    expect(usageErrorOf('approve', { by: '   ' }).message).toContain('--by');
  });

  test('the budget command is called budget, not extend, in its usage error', () => {
    expect(usageErrorOf('extend', {}).message).toMatch(/^budget needs --by/);
  });

  test('retry without guidance (or with blank guidance) is a usage error asking for --guidance', () => {
    expect(usageErrorOf('retry', { by: 'ana' }).message).toContain('--guidance');
    expect(usageErrorOf('retry', { by: 'ana', guidance: '  ' }).message).toContain('--guidance');
  });

  test('retry --attempts many is a usage error naming --attempts and the value', () => {
    const message = usageErrorOf('retry', { by: 'ana', guidance: 'g', attempts: 'many' }).message;
    expect(message).toContain('--attempts');
    expect(message).toContain('"many"');
  });

  test('retry --attempts above 20 or below 1 is a usage error', () => {
    expect(usageErrorOf('retry', { by: 'ana', guidance: 'g', attempts: '21' }).message).toContain('1 to 20');
    expect(usageErrorOf('retry', { by: 'ana', guidance: 'g', attempts: '0' }).message).toContain('--attempts');
  });

  test('budget with none of --attempts, --tokens, --cost, --time is a usage error naming all four', () => {
    const message = usageErrorOf('extend', { by: 'ana', note: 'more please' }).message;
    for (const flag of ['--attempts', '--tokens', '--cost', '--time']) expect(message).toContain(flag);
  });

  test.each([
    ['--cost', { cost: '-1' }],
    ['--cost', { cost: '0' }],
    ['--cost', { cost: 'lots' }],
    ['--time', { time: 'soon' }],
    ['--tokens', { tokens: '1.5' }],
    ['--attempts', { attempts: 'many' }],
    ['--attempts', { attempts: '101' }],
  ])('budget with a bad %s (%j) is a usage error naming the flag', (flag, bad) => {
    expect(usageErrorOf('extend', { by: 'ana', ...bad }).message).toContain(flag);
  });
});
