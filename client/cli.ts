#!/usr/bin/env node
import { Command, Option } from 'commander';
import { readConfig } from '../common/config';
import { BUILT_IN_LOOPS } from '../loops';
import { cancelCommand } from './commands/cancel';
import { decideCommand } from './commands/decide';
import { discoverCommand } from './commands/discover';
import { discoverySchemaOf } from './discovery';
import { eventCommand } from './commands/event';
import { listCommand } from './commands/list';
import { reviewCommand } from './commands/review';
import { reportCommand } from './commands/report';
import { runCommand } from './commands/run';
import { registerScheduleCommands } from './commands/schedule';
import { registerImproveCommands } from './commands/improve';
import { registerKeysCommands } from './commands/keys';
import { autonomyCommand } from './commands/autonomy';
import { grantCommand } from './commands/grant';
import { statusCommand } from './commands/status';
import { traceCommand } from './commands/trace';
import { webhookAuth, webhooksCommand } from './commands/webhooks';
import { withTuningOptions } from '../workers/tuning';
import { LoopwrightClient } from './loopwright-client';
import { consoleOutput, type Output } from './output';
import { precheckCommand } from './cli-checks';
import { configureCommanderErrors, errorLine } from './cli-errors';
import type { ServiceContext } from './service-errors';
import { decisionRequest } from './commands/decide';
import { UsageError } from '../common/errors';

type Action = (...args: any[]) => Promise<number>;

/**
 * The `loopwright` command line: a thin layer over LoopwrightClient and the process entry
 * points. Known errors print `error: <message>` (no stack) and exit with their code: 2 for bad
 * usage or input, 1 otherwise; `run --wait` exits 3 when a run ends in any state but completed.
 * Every argument and option is checked before a command connects to Temporal (client/cli-checks.ts,
 * commander's preAction hook), and each command's own checks run before it connects (`before`).
 */
export function buildProgram(
  io: Output,
  env: Record<string, string | undefined>,
  setExit: (code: number) => void,
): Command {
  const program = configureCommanderErrors(new Command('loopwright'), io)
    .description('Run AI agents in verified, budgeted, durable loops on Temporal.')
    .hook('preAction', (_program, command) => precheckCommand(command));

  /** `fn` with a connected client; `before` (the command's own checks of its arguments) runs first, so bad input never connects. */
  const withClient =
    (fn: (client: LoopwrightClient, ...args: any[]) => Promise<number>, before?: (...args: any[]) => unknown): Action =>
    async (...args) => {
      before?.(...args);
      const client = await LoopwrightClient.connect({ env });
      try {
        return await fn(client, ...args);
      } finally {
        await client.close();
      }
    };
  const action =
    (fn: Action) =>
    async (...args: unknown[]) =>
      setExit(await fn(...args));

  program
    .command('dev')
    .description('start the Temporal dev server (SQLite, Web UI) and a worker; Ctrl-C stops both')
    .option('--port <n>', 'gRPC port', '7233')
    .option('--ui-port <n>', 'Web UI port', '8233')
    .option('--http-port <n>', "port of the server's HTTP API (default: a free port)")
    .option(
      '--http-api',
      'let the HTTP API answer requests to 127.0.0.1 or localhost; any web page you open can then start and signal workflows through it (default: it refuses every request)',
    )
    .option('--metrics-port <n>', "port of the Temporal server's own /metrics (default: a free port)")
    .option('--db <file>', 'SQLite file (default .loopwright/dev.db)')
    .option('--headless', 'no Web UI')
    .option(
      '--metrics <host:port>',
      "serve the worker's Prometheus metrics there (default LOOPWRIGHT_METRICS, else 127.0.0.1:9464 when free)",
    )
    .option(
      '--codec-port <n>',
      'port of the codec server the Web UI decodes payloads through, started when LOOPWRIGHT_KEYS is set (default: a free port)',
    )
    .action(action(async (opts) => (await import('./commands/dev')).devCommand(opts, env, io)));
  withTuningOptions(program.commands.at(-1)!);
  program
    .command('codec-server')
    .description(
      "Temporal's codec server (POST /encode, /decode) with the LOOPWRIGHT_KEYS key ring, so the Web UI and `temporal --codec-endpoint` show decoded payloads; Ctrl-C stops",
    )
    .option('--port <n>', 'port (0: a free one)', '8234')
    .option('--host <ip>', 'address to bind; beyond localhost it needs a token', '127.0.0.1')
    .option(
      '--allow-origin <url>',
      'a Web UI origin browsers may call it from, repeatable (default http://localhost:8233 and http://127.0.0.1:8233)',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option(
      '--token <token>',
      'bearer token every request must carry (default LOOPWRIGHT_CODEC_TOKEN); required beyond localhost',
    )
    .action(action(async (opts) => (await import('./commands/codec-server')).codecServerCommand(opts, env, io)));
  program
    .command('worker')
    .description('run a worker on TEMPORAL_ADDRESS / LOOPWRIGHT_TASK_QUEUE')
    .option('--metrics <host:port>', 'serve Prometheus metrics there (default LOOPWRIGHT_METRICS; none when unset)')
    .action(action(async (opts) => (await import('./commands/worker')).workerCommand(opts, env, io)));
  withTuningOptions(program.commands.at(-1)!);
  program
    .command('model-server')
    .description('serve the Anthropic Messages API from a JSON script (tests, demos)')
    .requiredOption('--script <file>', 'the JSON script')
    .option('--port <n>', 'port', '8765')
    .option('--log <file>', 'append each request as a JSON line')
    .action(action(async (opts) => (await import('./commands/model-server')).modelServerCommand(opts, io)));
  program
    .command('demo')
    .description('what `npm start` runs: the embedded stack and a fix-test run on a sample repository')
    .option('--exit', 'stop once the run is done instead of keeping the stack up')
    .option('--yes', 'approve the verified fix without asking')
    .action(action(async (opts) => (await import('./commands/demo')).demoCommand(opts, env, io)));
  program
    .command('loops')
    .description('list the built-in loops with an example input')
    .action(
      action(async () => {
        for (const loop of BUILT_IN_LOOPS.values())
          io.out(`${loop.name}  ${loop.description}\n  example: --input '${JSON.stringify(loop.example)}'`);
        return 0;
      }),
    );
  program
    .command('run <loop>')
    .description('start a run of a loop')
    .option('--input <json>', 'the loop input: JSON, or @file')
    .option('--id <id>', 'workflow id (default <loop>/<time>-<hex>)')
    .option('--wait', 'follow the run; exit 0 when it completes, 3 otherwise')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, loop: string, opts) => runCommand(client, loop, opts, io))));
  program
    .command('status <id>')
    .description("a run's record")
    .option('--json', 'the run record as JSON')
    .action(action(withClient((client, id: string, opts) => statusCommand(client, id, opts, io))));
  program
    .command('trace <id>')
    .description("a run's story from its Temporal history: attempts, calls, verdicts, decisions, effects")
    .option('--json', 'the trace as JSON')
    .option('--markdown', 'the trace as a Markdown report (what delivery.trace writes)')
    .action(
      action(
        withClient(
          (client, id: string, opts) => traceCommand(client, id, opts, io),
          (_id: string, opts) => {
            if (opts.json && opts.markdown)
              throw new UsageError('--json and --markdown are two formats of the same trace: give one');
          },
        ),
      ),
    );
  program
    .command('report <file>')
    .description(
      'print a report or trace report the worker wrote; a sealed one (.md.enc) is opened with LOOPWRIGHT_KEYS',
    )
    .action(action((file: string) => reportCommand(file, env, io)));
  program
    .command('review <id>')
    .description(
      "what to look at before you approve: the diff, each check's verdict and evidence, the test results, the judge's reasons, cost and attempts",
    )
    .option('--json', 'the review as JSON')
    .option('--attempt <n>', 'review this attempt (default: the one waiting for a human, else the last)')
    .option('--no-diff', 'leave out the diff')
    .action(action(withClient((client, id: string, opts) => reviewCommand(client, id, opts, io, env))));
  const decision = (
    kind: 'approve' | 'reject' | 'retry' | 'extend' | 'audit',
    about: string,
    extra: (c: Command) => Command,
  ) =>
    extra(
      program
        .command(`${kind === 'extend' ? 'budget' : kind} <id>`)
        .description(about)
        .requiredOption(
          '--by <name>',
          'who decides: recorded, and verified when the decision is signed (LOOPWRIGHT_SIGNING_KEY)',
        )
        .option('--json', 'machine-readable output'),
    ).action(
      action(
        withClient(
          (client, id: string, opts) => decideCommand(client, kind, id, opts, io),
          (_id: string, opts) => decisionRequest(kind, opts),
        ),
      ),
    );
  decision('approve', 'accept the last candidate of a waiting run (recorded as a human override)', (c) =>
    c.option('--note <text>', 'a note for the record'),
  );
  decision('reject', 'end a waiting run as rejected', (c) => c.option('--reason <text>', 'why'));
  decision('retry', 'give a waiting run guidance and more attempts', (c) =>
    c
      .addOption(new Option('--guidance <text>', 'feedback for the next attempt').makeOptionMandatory())
      .option('--attempts <n>', 'attempts to grant', '1'),
  );
  decision('extend', "extend a waiting run's budget (recorded with who and how much)", (c) =>
    c
      .option('--attempts <n>', 'more attempts')
      .option('--tokens <n>', 'more tokens (input + output)')
      .option('--cost <usd>', 'more dollars')
      .option('--time <duration>', 'more active wall time, e.g. 30m')
      .option('--note <text>', 'a note for the record'),
  );
  decision('audit', 'record your audit of a completed run that needs one (L3 effects, audit samples)', (c) =>
    c.option('--verdict <ok|bad>', 'what you found', 'ok').option('--note <text>', 'a note for the record'),
  );
  program
    .command('cancel <id>')
    .description('cancel a run; it ends canceled with its record')
    .option('--json', 'the record as JSON')
    .action(action(withClient((client, id: string, opts) => cancelCommand(client, id, opts, io))));
  program
    .command('list')
    .description('runs, newest first')
    .option('--state <state>', 'filter by state')
    .option('--loop <loop>', 'filter by loop')
    .option('--limit <n>', 'at most this many', '50')
    .option('--needs-audit', 'only completed runs that wait for a person to audit them')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, opts) => listCommand(client, opts, io))));
  program
    .command('event <loop>')
    .description(
      'start the run for an event once per key (workflow id <loop>/<key>); a duplicate reports the existing run',
    )
    .requiredOption('--key <key>', 'the event key: letters, digits and ._:-/ (at most 200)')
    .option('--input <json>', 'the loop input: JSON, or @file')
    .option('--force', 'run a key whose run has closed again (same id)')
    .option('--json', 'machine-readable output')
    .action(action(withClient((client, loop: string, opts) => eventCommand(client, loop, opts, io))));
  program
    .command('webhooks')
    .description(
      'an HTTP receiver: POST /events/<loop> {key, input, force?}, signed with X-Hub-Signature-256 (HMAC-SHA256 of the body with LOOPWRIGHT_WEBHOOK_SECRET, as GitHub signs), delivers an event; Ctrl-C stops',
    )
    .option('--port <n>', 'port', '8788')
    .option(
      '--host <host>',
      "interface to bind (every delivery's signature is verified; put TLS in front when it is not local)",
      '127.0.0.1',
    )
    .option('--insecure', 'without LOOPWRIGHT_WEBHOOK_SECRET: accept unsigned deliveries (local testing only)')
    .action(
      action(async (opts) => {
        const auth = webhookAuth(env, opts); // no secret and no --insecure is a usage error, before connecting
        return withClient((client) => webhooksCommand(client, { ...opts, ...auth }, io))();
      }),
    );
  program
    .command('discover <loop>')
    .description(
      "find a loop's work items and start one run per item (ids <loop>/<repo>/<key>; existing ones are skipped)",
    )
    .option('--input <json>', 'the discovery input: JSON, or @file')
    .option('--wait', 'wait and print the runs started and the items skipped')
    .option('--json', 'machine-readable output')
    .action(
      action(async (loop: string, opts) => {
        discoverySchemaOf(loop); // a loop without a discovery source is a usage error, before connecting
        return withClient((client) => discoverCommand(client, loop, opts, io))();
      }),
    );
  registerScheduleCommands(program, (fn, before) => action(withClient(fn, before)), io);
  registerImproveCommands(program, (fn) => action(withClient(fn)), io, env);
  registerKeysCommands(program, action, io, env);
  program
    .command('autonomy <loop>')
    .description(
      "evidence for raising a loop's autonomy: its closed runs at one level, the current streak, and whether it meets its promotion rule (never changes the level)",
    )
    .option('--level <level>', "count runs at this level (L1, L2, L3); default: the level of the loop's spec")
    .option('--since <duration>', 'only runs that started within this duration, e.g. 30d')
    .option('--json', 'print the evidence as JSON')
    .action(
      action(
        withClient((client, loop: string, opts) =>
          autonomyCommand(client, loop, { ...opts, taskQueue: client.config.taskQueue }, io),
        ),
      ),
    );
  program
    .command('grant <loop>')
    .description(
      "an operator's signed grant of an autonomy level to a loop, once `autonomy <loop>` shows its promotion rule met (verified approvals only); workers honour it from LOOPWRIGHT_GRANTS",
    )
    .requiredOption('--level <level>', 'the level to grant: L3 (or L2 for loops that need a grant for it)')
    .requiredOption('--by <name>', 'you: the principal your key is listed for in the allowed signers')
    .option('--out <file>', 'where to write the grant (default <LOOPWRIGHT_GRANTS>/<loop>-<level>.json)')
    .option('--json', 'print the grant as JSON')
    .action(
      action(
        withClient(
          (client, loop: string, opts) =>
            grantCommand(client, loop, { ...opts, taskQueue: client.config.taskQueue }, io, env),
          (_loop: string, opts) => {
            if (!/^L[23]$/i.test(opts.level ?? ''))
              throw new UsageError(`--level must be L2 or L3, not "${opts.level ?? ''}"`);
          },
        ),
      ),
    );
  return program;
}

/** Where the CLI talks to, for error messages; the defaults when the environment is itself malformed. */
function serviceContext(env: Record<string, string | undefined>): ServiceContext {
  try {
    const config = readConfig(env);
    return { address: config.temporalAddress, namespace: config.namespace };
  } catch {
    return { address: 'TEMPORAL_ADDRESS', namespace: 'TEMPORAL_NAMESPACE' };
  }
}

/**
 * Runs the CLI and returns the exit code. Every error is printed as one line starting `error: `
 * (client/cli-errors.ts): exit 2 for bad usage, input or configuration, 1 for anything else; an
 * unexpected error shows its stack only with LOOPWRIGHT_DEBUG=1.
 */
export async function main(
  argv: string[],
  io: Output = consoleOutput,
  env: Record<string, string | undefined> = process.env,
): Promise<number> {
  let code = 0;
  const program = buildProgram(io, env, (c) => (code = c));
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    const shown = errorLine(err, serviceContext(env), env);
    if (!shown) return 0;
    shown.lines.forEach((line) => io.err(line));
    return shown.code;
  }
}

/** An error that escaped every command (an unhandled rejection, a throw in a callback): one line, exit 1 unless it is a known one. */
function crash(err: unknown): void {
  const shown = errorLine(err, serviceContext(process.env), process.env) ?? {
    lines: ['error: internal error'],
    code: 1,
  };
  shown.lines.forEach((line) => consoleOutput.err(line));
  process.exit(shown.code);
}

if (require.main === module) {
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  main(process.argv.slice(2)).then((code) => process.exit(code), crash);
}
