import fc from 'fast-check';
import { ActiveClock } from '../../../workflows/loop/active-clock';

describe('ActiveClock', () => {
  test('counts the time since it started while running', () => {
    const clock = new ActiveClock(1000);
    expect(clock.used(1000)).toBe(0);
    expect(clock.used(4500)).toBe(3500);
  });

  test('does not count the time while paused, and counts again after resume', () => {
    const clock = new ActiveClock(0);
    clock.pause(2000);
    expect(clock.used(2000)).toBe(2000);
    expect(clock.used(86_400_000)).toBe(2000);
    clock.resume(100_000);
    expect(clock.used(103_000)).toBe(5000);
  });

  test('a second pause does not add the paused time', () => {
    const clock = new ActiveClock(0);
    clock.pause(1000);
    clock.pause(9000);
    expect(clock.used(20_000)).toBe(1000);
  });

  test('a second resume does not restart the running interval', () => {
    const clock = new ActiveClock(0);
    clock.pause(1000);
    clock.resume(2000);
    clock.resume(5000);
    expect(clock.used(6000)).toBe(5000);
  });

  test('resume while running keeps the interval that started at construction', () => {
    const clock = new ActiveClock(0);
    clock.resume(3000);
    expect(clock.used(4000)).toBe(4000);
  });

  test('a time before the start gives zero, never a negative amount', () => {
    const clock = new ActiveClock(10_000);
    expect(clock.used(5000)).toBe(0);
  });

  test('a pause at a time before the interval began adds nothing', () => {
    const clock = new ActiveClock(0);
    clock.pause(1000);
    clock.resume(5000);
    clock.pause(4000);
    expect(clock.used(10_000)).toBe(1000);
  });

  test('asking for a time before a resume gives what was used before it, not less', () => {
    const clock = new ActiveClock(0);
    clock.pause(1500);
    clock.resume(3000);
    expect(clock.used(2000)).toBe(1500);
  });

  test('with time moving forward through any pauses and resumes, used never decreases and is the sum of running intervals', () => {
    const step = fc.record({
      op: fc.constantFrom('pause' as const, 'resume' as const, 'read' as const),
      dt: fc.nat(10_000),
    });
    fc.assert(
      fc.property(fc.nat(1e9), fc.array(step, { maxLength: 40 }), (start, steps) => {
        const clock = new ActiveClock(start);
        let now = start;
        let running = true;
        let expected = 0;
        let last = 0;
        for (const { op, dt } of steps) {
          if (running) expected += dt;
          now += dt;
          if (op === 'pause') {
            clock.pause(now);
            running = false;
          } else if (op === 'resume') {
            clock.resume(now);
            running = true;
          }
          const used = clock.used(now);
          expect(used).toBe(expected);
          expect(used).toBeGreaterThanOrEqual(last);
          last = used;
        }
      }),
    );
  });
});
