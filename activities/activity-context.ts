import { Context } from '@temporalio/activity';

/** The context of the activity this code runs in, or undefined outside one (tests, the CLI). */
export function currentActivityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** The cancellation of the activity this code runs in, if it runs in one. */
export function activityCancellation(): AbortSignal | undefined {
  return currentActivityContext()?.cancellationSignal;
}
