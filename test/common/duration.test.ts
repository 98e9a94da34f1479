import { isDuration, parseDuration } from '../../common/duration';

describe('parseDuration', () => {
  test.each([
    ['500ms', 500],
    ['30s', 30_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
    ['1.5h', 5_400_000],
    [' 10s ', 10_000],
    ['0.5s', 500],
  ])('reads %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(isDuration(text)).toBe(true);
  });

  test.each(['soon', '', '10', 'h', '-5m', '5 minutes', '5M', '1e3s', '5w', '1h30m'])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
    expect(isDuration(text)).toBe(false);
  });

  test('rounds fractional milliseconds to a whole number', () => {
    expect(parseDuration('1.0004s')).toBe(1000);
    expect(Number.isInteger(parseDuration('0.3333s'))).toBe(true);
  });
});
