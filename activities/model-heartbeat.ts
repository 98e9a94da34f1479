import type { Context } from '@temporalio/activity';

/** The details each running activity last recorded, repeated by its liveness heartbeats. */
const recorded = new WeakMap<Context, unknown>();

/**
 * Heartbeats `details` and keeps them as the activity's details: Temporal stores only the latest
 * heartbeat's details, and a heartbeat without any would erase them, so every later liveness
 * heartbeat ({@link heartbeatAlive}) repeats these. The workflow finds them in a timeout's
 * `lastHeartbeatDetails` when the worker is lost (the model calls keep their usage there).
 */
export function recordHeartbeat(ctx: Context, details: unknown): void {
  recorded.set(ctx, details);
  ctx.heartbeat(details);
}

/**
 * Keeps `details` as the activity's details without sending them now: the next liveness heartbeat
 * ({@link heartbeatAlive}) carries them. For a call too young to heartbeat yet.
 */
export function keepDetails(ctx: Context, details: unknown): void {
  recorded.set(ctx, details);
}

/** A liveness heartbeat: carries the details the activity last recorded, if any. */
export function heartbeatAlive(ctx: Context): void {
  ctx.heartbeat(recorded.get(ctx));
}
