import { newRunId } from '../../client/run-id';

describe('newRunId', () => {
  test('is <loop>/<yyyymmdd-hhmmss>-<4 hex> in UTC', () => {
    const id = newRunId('evaluate-optimize', new Date('2024-03-05T07:08:09.123Z'));
    expect(id).toMatch(/^evaluate-optimize\/20240305-070809-[0-9a-f]{4}$/);
  });

  test('defaults to the current time', () => {
    const before = new Date();
    const id = newRunId('fix-test');
    const match = /^fix-test\/(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})-[0-9a-f]{4}$/.exec(id);
    expect(match).not.toBeNull();
    const [, y, mo, d, h, mi, s] = match ?? [];
    const asIso = `${y}-${mo}-${d}T${h}:${mi}:${s}Z`;
    expect(Math.abs(Date.parse(asIso) - before.getTime())).toBeLessThan(5_000);
  });

  test('ids made in the same second differ in their random suffix', () => {
    const now = new Date('2024-12-31T23:59:59Z');
    const ids = new Set(Array.from({ length: 20 }, () => newRunId('l', now)));
    expect(ids.size).toBeGreaterThan(1);
    for (const id of ids) expect(id.startsWith('l/20241231-235959-')).toBe(true);
  });

  test('sorts by time as plain strings', () => {
    const earlier = newRunId('l', new Date('2024-09-30T23:00:00Z'));
    const later = newRunId('l', new Date('2024-10-01T01:00:00Z'));
    expect(earlier < later).toBe(true);
  });
});
