import { SECRET_NAME } from '../../common/redact';

/**
 * A copy of `env` without the variables a command the model runs should not see:
 * ANTHROPIC_API_KEY and any other name containing API_KEY, TOKEN, SECRET, PASSWORD or
 * CREDENTIAL (case-insensitive).
 */
export function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !SECRET_NAME.test(name)) out[name] = value;
  }
  return out;
}
