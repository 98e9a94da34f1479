import type { DevServer } from '../server/dev-server';

/** Stops the dev server that global-setup started, by its pid. */
export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __loopwrightServer?: DevServer }).__loopwrightServer?.stop();
}
