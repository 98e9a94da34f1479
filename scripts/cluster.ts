/**
 * `npm run cluster -- start [--port 7233] [--workers 2] [--frontends 2] [--ui-port N] [--dir DIR]`,
 * `npm run cluster -- stop [--dir DIR]`, `npm run cluster -- status [--dir DIR]`: Loopwright's
 * production topology on one machine (see server/cluster/cluster.ts and the README's
 * "Running on a cluster"). Bad input prints one `error:` line and exits 2.
 */
import { join } from 'path';
import { LoopwrightError, UsageError } from '../common/errors';
import { isRunning, readState } from '../server/cluster/processes';
import { startCluster } from '../server/cluster/cluster';
import { stopCluster } from '../server/cluster/control';
import { serverSecurityEnv } from '../server/cluster/temporal-config';
import { loopwrightHome } from '../server/paths';

const USAGE =
  'usage: npm run cluster -- start [--port N] [--workers N] [--frontends N] [--ui-port N] [--dir DIR] | stop [--dir DIR] | status [--dir DIR]';
const NUMERIC = new Set(['--port', '--workers', '--frontends', '--ui-port']);

/** The command and its flags, or a UsageError naming what is wrong. */
export function parseClusterArgs(argv: string[]): {
  command: 'start' | 'stop' | 'status';
  flags: Record<string, string>;
} {
  const [command, ...rest] = argv;
  if (command !== 'start' && command !== 'stop' && command !== 'status')
    throw new UsageError(`unknown command ${command ?? '(none)'}: ${USAGE}`);
  const allowed = command === 'start' ? new Set([...NUMERIC, '--dir']) : new Set(['--dir']);
  const flags: Record<string, string> = {};
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, value] = [rest[i], rest[i + 1]];
    if (flag === undefined || !allowed.has(flag))
      throw new UsageError(`unknown option ${flag} for ${command}: ${USAGE}`);
    if (value === undefined || value.startsWith('--')) throw new UsageError(`${flag} needs a value`);
    if (NUMERIC.has(flag) && !/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number, not ${value}`);
    flags[flag] = value;
  }
  return { command, flags };
}

async function main(argv: string[]): Promise<void> {
  const { command, flags } = parseClusterArgs(argv);
  const dir = flags['--dir'] ?? join(loopwrightHome(), 'cluster');
  const num = (f: string) => (flags[f] === undefined ? undefined : Number(flags[f]));
  if (command === 'start') {
    const state = await startCluster({
      dir,
      port: num('--port'),
      workers: num('--workers'),
      frontends: num('--frontends'),
      uiPort: num('--ui-port'),
      // TLS and an authorizer for the Temporal services, from the variables docker-compose.yml documents (TEMPORAL_TLS_FRONTEND_CERT, ...).
      serverEnv: serverSecurityEnv(process.env),
      log: (l) => console.error(l),
    });
    console.log(
      `cluster running: Temporal at ${state.addresses.join(', ')}, namespace ${state.namespace}, PostgreSQL at 127.0.0.1:${state.pgPort}`,
    );
    if (state.uiUrl) console.log(`Web UI: ${state.uiUrl}`);
    if (state.codecUrl) console.log(`codec server (the Web UI decodes payloads through it): ${state.codecUrl}`);
    for (const p of state.processes) console.log(`  ${p.name.padEnd(16)} pid ${String(p.pid)}  log ${p.logFile}`);
    console.log(
      `use it: TEMPORAL_ADDRESS=${state.addresses[0]} npx loopwright run ...   stop it: npm run cluster -- stop`,
    );
  } else if (command === 'stop') {
    const stopped = await stopCluster(dir);
    console.log(stopped.length ? `stopped ${stopped.join(', ')}` : `no cluster running from ${dir}`);
  } else {
    const state = readState(dir);
    if (!state) return void console.log(`no cluster running from ${dir}`);
    console.log(
      `Temporal at ${state.addresses.join(', ')}, namespace ${state.namespace}, PostgreSQL at 127.0.0.1:${state.pgPort}`,
    );
    for (const p of state.processes)
      console.log(`  ${p.name.padEnd(16)} pid ${String(p.pid)}  ${isRunning(p) ? 'running' : 'NOT RUNNING'}`);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err: unknown) => {
      if (err instanceof LoopwrightError) {
        console.error(`error: ${err.message.split('\n')[0]}`);
        process.exit(err.exitCode);
      }
      console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
