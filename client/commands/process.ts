/** Resolves on the first SIGINT or SIGTERM (Ctrl-C), so a command can shut down in order. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** Which model endpoint the worker will call, in one line. */
export function modelEndpointNote(env: Record<string, string | undefined>): string {
  if (env.ANTHROPIC_BASE_URL)
    return `model endpoint: ${env.ANTHROPIC_BASE_URL}${env.ANTHROPIC_API_KEY ? ' (with ANTHROPIC_API_KEY)' : ''}`;
  if (env.ANTHROPIC_API_KEY) return 'model endpoint: Anthropic API (ANTHROPIC_API_KEY is set)';
  return 'warning: neither ANTHROPIC_API_KEY nor ANTHROPIC_BASE_URL is set: model calls will fail (try `loopwright model-server --script FILE` and ANTHROPIC_BASE_URL)';
}
