/**
 * Counts the time a run works: it runs while the run is active and pauses while the run waits
 * for a human, so a wall-time budget is not eaten by someone's weekend. Pure: callers pass the
 * (workflow) time.
 */
export class ActiveClock {
  private usedMs = 0;
  private since: number | null;

  constructor(now: number, alreadyUsedMs = 0) {
    this.since = now;
    this.usedMs = alreadyUsedMs;
  }

  used(now: number): number {
    return this.usedMs + (this.since === null ? 0 : Math.max(0, now - this.since));
  }

  pause(now: number): void {
    if (this.since === null) return;
    this.usedMs += Math.max(0, now - this.since);
    this.since = null;
  }

  resume(now: number): void {
    if (this.since === null) this.since = now;
  }
}
