import { ConfigError } from '../../common/errors';
import type { ModelClient } from '../model-port';
import { createAnthropic, createAnthropicModelClient } from './anthropic/client';

type Env = Record<string, string | undefined>;

/** The model providers a worker can use, by the name `LOOPWRIGHT_MODEL_PROVIDER` gives (default `anthropic`). */
const PROVIDERS: Record<string, (env: Env) => ModelClient> = {
  anthropic: (env) => createAnthropicModelClient(createAnthropic(env)),
};

/**
 * The model client of a worker: the provider `LOOPWRIGHT_MODEL_PROVIDER` names (default
 * `anthropic`), configured from the same environment (for Anthropic: `ANTHROPIC_API_KEY`,
 * `ANTHROPIC_BASE_URL`). An unknown provider is a ConfigError that lists the known ones.
 */
export function createModelClient(env: Env): ModelClient {
  const name = env.LOOPWRIGHT_MODEL_PROVIDER || 'anthropic';
  const create = Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name] : undefined;
  if (!create)
    throw new ConfigError(
      `unknown model provider ${name} (LOOPWRIGHT_MODEL_PROVIDER): known providers are ${Object.keys(PROVIDERS).join(', ')}`,
    );
  return create(env);
}
