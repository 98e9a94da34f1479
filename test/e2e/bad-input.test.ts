import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { LoopwrightClient } from '../../client/loopwright-client';
import { runCli, type CliResult } from '../helpers/cli';
import { judgeSays, script, workerSays } from '../helpers/scripts';
import { clientEnv, scriptedStacks, testAddress, uniqueQueue } from '../helpers/temporal';

/**
 * Bad input, all of it: the built CLI as a user runs it, against the suite's dev server, over a
 * table of malformed arguments, options and environments for every command. Each must print
 * exactly one line on stderr, starting `error:`, with no stack, exit 2, print nothing that looks
 * like success, and start no workflow.
 */
const home = mkdtempSync(path.join(tmpdir(), 'lw-bad-input-'));
const queue = uniqueQueue('bad-input');
const env = () => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  LOOPWRIGHT_HOME: home,
  TEMPORAL_ADDRESS: testAddress(),
  LOOPWRIGHT_TASK_QUEUE: queue,
});

const files = path.join(home, 'files');
mkdirSync(files);
const file = (name: string, content: string | Buffer) => {
  const p = path.join(files, name);
  writeFileSync(p, content);
  return p;
};
const INPUT = JSON.stringify({ task: 'Say hi.', rubric: ['short'], maxAttempts: 1 });
const long = (n: number, c = 'a') => c.repeat(n);
const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;

type Case = [title: string, args: string[], extraEnv?: Record<string, string>];

const RUN = ['run', 'evaluate-optimize'];
const cases: Case[] = [
  // Commander: unknown commands and options, missing arguments and values.
  ['no command', []],
  ['unknown command', ['bogus']],
  ['unknown command with ESC', ['bo\x1b[2Jgus']],
  ['huge unknown command', [long(100_000)]],
  ['group without subcommand', ['schedule']],
  ['unknown schedule subcommand', ['schedule', 'explode']],
  ['unknown keys subcommand', ['keys', 'steal']],
  ['unknown option', [...RUN, '--input', INPUT, '--bogus']],
  ['misspelt option', [...RUN, '--input', INPUT, '--jsn']],
  ['unknown option with a newline', [...RUN, '--in\nput', INPUT]],
  ['option value missing', [...RUN, '--input']],
  ['run without loop', ['run']],
  ['status without id', ['status']],
  ['trace without id', ['trace']],
  ['review without id', ['review']],
  ['cancel without id', ['cancel']],
  ['approve without --by', ['approve', 'x']],
  ['reject without id', ['reject']],
  ['retry without --guidance', ['retry', 'x', '--by', 'bob']],
  ['excess arguments', ['status', 'a', 'b']],
  ['event without --key', ['event', 'evaluate-optimize', '--input', INPUT]],
  ['grant without --level', ['grant', 'fix-test', '--by', 'bob']],
  [
    'bad --overlap choice',
    ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', INPUT, '--overlap', 'sometimes'],
  ],
  [
    'bad --expect choice',
    ['regression', 'add', 'evaluate-optimize', '--from-run', 'x', '--by', 'bob', '--expect', 'maybe'],
  ],
  // Loops.
  ['run of an unknown loop', ['run', 'no-such-loop', '--input', INPUT]],
  ['run of a loop with a newline', ['run', 'evaluate-optimize\nx', '--input', INPUT]],
  ['run of a huge loop name', ['run', long(50_000), '--input', INPUT]],
  ['event of an unknown loop', ['event', 'nope', '--key', 'k1', '--input', INPUT]],
  ['discover of a loop without discovery', ['discover', 'evaluate-optimize', '--input', '{}']],
  ['improve of an unknown loop', ['improve', 'nope']],
  ['autonomy of an unknown loop', ['autonomy', 'nope']],
  ['harness list of an unknown loop', ['harness', 'list', 'nope']],
  ['list --loop with a newline', ['list', '--loop', 'x\ny']],
  ['list --loop empty', ['list', '--loop', '']],
  // --input: JSON, files, size, depth, encoding, schema.
  ['input not JSON', [...RUN, '--input', '{task:']],
  ['input empty', [...RUN, '--input', '']],
  ['input not an object', [...RUN, '--input', '42']],
  ['input failing the schema', [...RUN, '--input', '{"task": 5}']],
  ['input with an unknown field type', [...RUN, '--input', '{"task":"t","rubric":"x"}']],
  ['input nested 5,000 deep', [...RUN, '--input', deep(5000)]],
  ['input objects nested 65 deep', [...RUN, '--input', deepObject(65)]],
  ['input array nested 65 deep in a string-heavy value', [...RUN, '--input', `{"task":"[[[[","rubric":${deep(65)}}`]],
  ['input of 100 KB inline that fails the schema', [...RUN, '--input', JSON.stringify({ task: long(100_000) })]],
  [
    'input @file of 3 MB',
    [...RUN, '--input', `@${file('big.json', JSON.stringify({ task: long(3_000_000), rubric: ['x'] }))}`],
  ],
  [
    'input @file of 600 KB',
    [...RUN, '--input', `@${file('600k.json', JSON.stringify({ task: long(600_000), rubric: ['x'] }))}`],
  ],
  ['input @file nested 5,000 deep', [...RUN, '--input', `@${file('deep.json', deep(5000))}`]],
  [
    'input @file not UTF-8',
    [
      ...RUN,
      '--input',
      `@${file('latin1.json', Buffer.from([0x7b, 0x22, 0x74, 0x22, 0x3a, 0x22, 0xe9, 0xff, 0x22, 0x7d]))}`,
    ],
  ],
  ['input @file missing', [...RUN, '--input', `@${path.join(files, 'missing.json')}`]],
  ['input @file a directory', [...RUN, '--input', `@${files}`]],
  ['input @ with no file', [...RUN, '--input', '@']],
  ['input @/dev/zero', [...RUN, '--input', '@/dev/zero']],
  ['input @file empty', [...RUN, '--input', `@${file('empty.json', '')}`]],
  ['event input nested 5,000 deep', ['event', 'evaluate-optimize', '--key', 'deep-1', '--input', deep(5000)]],
  [
    'event input of 3 MB file',
    ['event', 'evaluate-optimize', '--key', 'big-1', '--input', `@${path.join(files, 'big.json')}`],
  ],
  ['event input failing the schema', ['event', 'evaluate-optimize', '--key', 'schema-1', '--input', '{"rubric":1}']],
  ['schedule input failing the schema', ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', '{}']],
  ['schedule input nested deep', ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', deep(1000)]],
  ['discover input not JSON', ['discover', 'ci-triage', '--input', 'nope']],
  ['discover input failing the schema', ['discover', 'ci-triage', '--input', '{"repo": 5}']],
  // Ids.
  ['empty --id', [...RUN, '--input', INPUT, '--id', '']],
  ['--id of 1,001 characters', [...RUN, '--input', INPUT, '--id', long(1001)]],
  ['--id of 201 characters', [...RUN, '--input', INPUT, '--id', long(201)]],
  ['--id with a newline', [...RUN, '--input', INPUT, '--id', 'a\nb']],
  ['--id with ESC', [...RUN, '--input', INPUT, '--id', 'a\x1b[31mb']],
  ['--id with a bidi override', [...RUN, '--input', INPUT, '--id', 'a\u202eb']],
  ['--id with a zero-width space', [...RUN, '--input', INPUT, '--id', 'a\u200bb']],
  ['--id with a tab', [...RUN, '--input', INPUT, '--id', 'a\tb']],
  ['--id with a leading space', [...RUN, '--input', INPUT, '--id', ' ab']],
  ['--id with a no-break space', [...RUN, '--input', INPUT, '--id', 'a\u00a0b']],
  ['--id with U+FFFD (not UTF-8)', [...RUN, '--input', INPUT, '--id', 'a\ufffdb']],
  ['--id with a private-use character', [...RUN, '--input', INPUT, '--id', 'a\ue000b']],
  ['status of an empty id', ['status', '']],
  ['status of a 1,001-character id', ['status', long(1001)]],
  ['status of an id with a newline', ['status', 'a\nb']],
  ['status of an id that does not exist', ['status', 'no-such-run/at-all']],
  ['trace of an id that does not exist', ['trace', 'no-such-run/at-all']],
  ['review of an id that does not exist', ['review', 'no-such-run/at-all']],
  ['approve of an id that does not exist', ['approve', 'no-such-run/at-all', '--by', 'bob']],
  ['cancel of an id that does not exist', ['cancel', 'no-such-run/at-all']],
  ['trace of an id with ESC', ['trace', 'x\x1b]0;owned\x07']],
  ['review of an id with a bidi isolate', ['review', 'x\u2066y']],
  ['cancel of a huge id', ['cancel', long(100_000)]],
  ['reject of an id with a CR', ['reject', 'a\rb', '--by', 'bob']],
  ['schedule describe of an empty id', ['schedule', 'describe', '']],
  [
    'schedule create with an id with a newline',
    ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', INPUT, '--id', 'n\n1'],
  ],
  [
    'schedule create with a 300-character id',
    ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--input', INPUT, '--id', long(300)],
  ],
  ['schedule pause of a missing schedule', ['schedule', 'pause', 'no-such-schedule']],
  ['regression add from a bad run id', ['regression', 'add', 'evaluate-optimize', '--from-run', 'a\nb', '--by', 'bob']],
  // Event keys.
  ['event key with a space', ['event', 'evaluate-optimize', '--key', 'a b', '--input', INPUT]],
  ['event key empty', ['event', 'evaluate-optimize', '--key', '', '--input', INPUT]],
  ['event key of 201 characters', ['event', 'evaluate-optimize', '--key', long(201), '--input', INPUT]],
  ['event key with a newline', ['event', 'evaluate-optimize', '--key', 'a\nb', '--input', INPUT]],
  ['event key with unicode', ['event', 'evaluate-optimize', '--key', 'ключ', '--input', INPUT]],
  // Names and free text.
  ['--by empty', ['approve', 'x', '--by', '']],
  ['--by blank', ['approve', 'x', '--by', '   ']],
  ['--by with a newline', ['approve', 'x', '--by', 'mallory\n  decision approve by admin']],
  ['--by of 300 characters', ['reject', 'x', '--by', long(300)]],
  ['--note of 100 KB', ['approve', 'x', '--by', 'bob', '--note', long(100_000)]],
  ['--note with ESC', ['approve', 'x', '--by', 'bob', '--note', 'ok\x1b[2J']],
  ['--reason with NUL-like control', ['reject', 'x', '--by', 'bob', '--reason', 'no\x07']],
  ['--guidance blank', ['retry', 'x', '--by', 'bob', '--guidance', ' ']],
  ['--guidance with a lone surrogate', ['retry', 'x', '--by', 'bob', '--guidance', 'fix \ud800 it']],
  ['grant --by with a newline', ['grant', 'fix-test', '--level', 'L3', '--by', 'a\nb']],
  // Numbers, durations, choices.
  ['--limit not a number', ['list', '--limit', 'ten']],
  ['--limit zero', ['list', '--limit', '0']],
  ['--limit negative', ['list', '--limit', '-5']],
  ['--limit huge', ['list', '--limit', '1e400']],
  ['--limit fractional', ['list', '--limit', '2.5']],
  ['--state unknown', ['list', '--state', 'exploded']],
  ['--state with a quote', ['list', '--state', "running' OR 'a'='a"]],
  ['--attempt zero', ['review', 'x', '--attempt', '0']],
  ['--attempt word', ['review', 'x', '--attempt', 'last']],
  ['retry --attempts 0', ['retry', 'x', '--by', 'bob', '--guidance', 'g', '--attempts', '0']],
  ['retry --attempts 21', ['retry', 'x', '--by', 'bob', '--guidance', 'g', '--attempts', '21']],
  ['budget with nothing', ['budget', 'x', '--by', 'bob']],
  ['budget --tokens word', ['budget', 'x', '--by', 'bob', '--tokens', 'many']],
  ['budget --cost negative', ['budget', 'x', '--by', 'bob', '--cost', '-1']],
  ['budget --cost NaN', ['budget', 'x', '--by', 'bob', '--cost', 'NaN']],
  ['budget --time not a duration', ['budget', 'x', '--by', 'bob', '--time', 'forever']],
  ['budget --time huge', ['budget', 'x', '--by', 'bob', '--time', '99999999999999d']],
  ['audit --verdict bad value', ['audit', 'x', '--by', 'bob', '--verdict', 'meh']],
  [
    'schedule --every not a duration',
    ['schedule', 'create', 'evaluate-optimize', '--every', 'often', '--input', INPUT],
  ],
  ['schedule --every under a second', ['schedule', 'create', 'evaluate-optimize', '--every', '10ms', '--input', INPUT]],
  [
    'schedule with --every and --cron',
    ['schedule', 'create', 'evaluate-optimize', '--every', '1h', '--cron', '* * * * *', '--input', INPUT],
  ],
  ['schedule with neither --every nor --cron', ['schedule', 'create', 'evaluate-optimize', '--input', INPUT]],
  [
    'schedule --cron with a newline',
    ['schedule', 'create', 'evaluate-optimize', '--cron', '0 9 * * *\n0 10 * * *', '--input', INPUT],
  ],
  ['improve --since huge', ['improve', 'evaluate-optimize', '--since', '9999999999999999d']],
  ['improve --repeats 0', ['improve', 'evaluate-optimize', '--repeats', '0']],
  ['improve --held-out 1', ['improve', 'evaluate-optimize', '--held-out', '1']],
  ['improve --min-occurrences word', ['improve', 'evaluate-optimize', '--min-occurrences', 'few']],
  ['improve --every zero', ['improve', 'evaluate-optimize', '--every', '0s']],
  ['autonomy --level L9', ['autonomy', 'fix-test', '--level', 'L9']],
  ['autonomy --since word', ['autonomy', 'fix-test', '--since', 'ever']],
  ['grant --level L1', ['grant', 'fix-test', '--level', 'L1', '--by', 'bob']],
  ['harness show version word', ['harness', 'show', 'evaluate-optimize', 'latest']],
  ['harness rollback --to word', ['harness', 'rollback', 'evaluate-optimize', '--by', 'bob', '--to', 'two']],
  ['trace --json and --markdown', ['trace', 'x', '--json', '--markdown']],
  // Ports, addresses and paths of the process commands (refused before anything starts).
  ['dev --port 99999', ['dev', '--port', '99999']],
  ['dev --ui-port word', ['dev', '--ui-port', 'web']],
  ['dev --http-port negative', ['dev', '--http-port', '-1']],
  ['dev --metrics-port fraction', ['dev', '--metrics-port', '80.5']],
  ['dev --codec-port huge', ['dev', '--codec-port', '1e9']],
  ['dev --metrics not host:port', ['dev', '--metrics', 'nowhere']],
  ['worker --metrics bad port', ['worker', '--metrics', '127.0.0.1:99999']],
  ['codec-server --port word', ['codec-server', '--port', 'eighty']],
  ['codec-server --host with a space', ['codec-server', '--host', 'a b']],
  ['webhooks --port negative', ['webhooks', '--port', '-2', '--insecure']],
  ['model-server --port word', ['model-server', '--script', '/nonexistent.json', '--port', 'x']],
  ['report of a missing file', ['report', path.join(files, 'missing.md')]],
  ['report of a path with a newline', ['report', 'a\nb.md']],
  ['keys init --file with a newline', ['keys', 'init', '--file', 'a\nb']],
  ['grant --out with ESC', ['grant', 'fix-test', '--level', 'L3', '--by', 'bob', '--out', 'a\x1bb']],
  // The environment.
  ['TEMPORAL_ADDRESS with a scheme', ['list'], { TEMPORAL_ADDRESS: 'http://localhost:7233' }],
  ['TEMPORAL_ADDRESS with a bad port', ['status', 'x'], { TEMPORAL_ADDRESS: 'localhost:99999' }],
  ['TEMPORAL_ADDRESS with a newline', ['list'], { TEMPORAL_ADDRESS: 'localhost:7233\nx' }],
  ['TEMPORAL_ADDRESS nobody answers', ['list'], { TEMPORAL_ADDRESS: '127.0.0.1:1' }],
  ['TEMPORAL_NAMESPACE unknown (list)', ['list'], { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' }],
  ['TEMPORAL_NAMESPACE unknown (status)', ['status', 'x'], { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' }],
  [
    'TEMPORAL_NAMESPACE unknown (run)',
    [...RUN, '--input', INPUT],
    { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' },
  ],
  [
    'TEMPORAL_NAMESPACE unknown (schedule list)',
    ['schedule', 'list'],
    { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' },
  ],
  [
    'TEMPORAL_NAMESPACE unknown (autonomy)',
    ['autonomy', 'fix-test'],
    { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' },
  ],
  ['TEMPORAL_NAMESPACE with a space', ['list'], { TEMPORAL_NAMESPACE: 'my namespace' }],
  ['TEMPORAL_NAMESPACE huge', ['list'], { TEMPORAL_NAMESPACE: long(5000) }],
  ['LOOPWRIGHT_TASK_QUEUE with a newline', [...RUN, '--input', INPUT], { LOOPWRIGHT_TASK_QUEUE: 'q\nx' }],
  ['LOOPWRIGHT_TASK_QUEUE huge', [...RUN, '--input', INPUT], { LOOPWRIGHT_TASK_QUEUE: long(2000) }],
  ['LOOPWRIGHT_KEYS missing file', ['list'], { LOOPWRIGHT_KEYS: path.join(files, 'no-keys') }],
  ['LOOPWRIGHT_KEYS not a key file', ['list'], { LOOPWRIGHT_KEYS: file('not-keys', 'hello\n') }],
  [
    'LOOPWRIGHT_KEYS binary garbage',
    ['list'],
    { LOOPWRIGHT_KEYS: file('garbage-keys', Buffer.from([0, 1, 2, 0xff, 0xfe])) },
  ],
  ['LOOPWRIGHT_SEAL_FORMAT unknown (list)', ['list'], { LOOPWRIGHT_SEAL_FORMAT: '3' }],
  ['LOOPWRIGHT_SEAL_FORMAT unknown (worker)', ['worker'], { LOOPWRIGHT_SEAL_FORMAT: 'old' }],
  ['LOOPWRIGHT_METRICS not host:port', ['worker'], { LOOPWRIGHT_METRICS: 'everywhere' }],
  ['LOOPWRIGHT_SANDBOX_MEMORY not a size (worker)', ['worker'], { LOOPWRIGHT_SANDBOX_MEMORY: 'lots' }],
  ['LOOPWRIGHT_SANDBOX_PIDS too few (worker)', ['worker'], { LOOPWRIGHT_SANDBOX_PIDS: '2' }],
  // Connection security (server/temporal-connection.ts): checked before anything connects.
  [
    'TEMPORAL_TLS_CLIENT_CERT_PATH missing file',
    ['list'],
    {
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(files, 'no.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(files, 'no.key'),
    },
  ],
  [
    'TEMPORAL_TLS_CLIENT_CERT_PATH without a key',
    ['list'],
    { TEMPORAL_TLS_CLIENT_CERT_PATH: file('client.pem', '-----BEGIN CERTIFICATE-----\nx\n') },
  ],
  [
    'TEMPORAL_TLS_CLIENT_KEY_PATH without a certificate',
    ['worker'],
    { TEMPORAL_TLS_CLIENT_KEY_PATH: file('client.key', '-----BEGIN PRIVATE KEY-----\nx\n') },
  ],
  [
    'TEMPORAL_TLS_SERVER_CA_CERT_PATH not PEM',
    ['worker'],
    { TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.txt', 'hello\n') },
  ],
  ['TEMPORAL_TLS neither true nor false', [...RUN, '--input', INPUT], { TEMPORAL_TLS: 'maybe' }],
  ['TEMPORAL_TLS_DISABLE_HOST_VERIFICATION true', ['list'], { TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }],
  ['LOOPWRIGHT_WORKER_MODEL with a newline', [...RUN, '--input', INPUT], { LOOPWRIGHT_WORKER_MODEL: 'claude\nx' }],
  ['webhooks without a secret', ['webhooks']],
];

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  const queue = items.entries(); // shared: each runner takes the next item when it is free
  await Promise.all(
    Array.from({ length: limit }, async () => {
      for (const [i, item] of queue) results[i] = await fn(item);
    }),
  );
  return results;
}

/** What was wrong with a result, or [] when it is one clean error line and exit 2. */
function problems(r: CliResult): string[] {
  const found: string[] = [];
  if (r.code !== 2) found.push(`exit code ${r.code}`);
  const lines = r.stderr.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
  if (lines.length !== 1) found.push(`${lines.length} lines on stderr`);
  if (!/^error: \S/.test(lines[0] ?? '')) found.push('stderr does not start with "error: "');
  if (/\n\s+at /.test(r.stderr) || /^\s+at .+:\d+:\d+\)?$/m.test(r.stderr)) found.push('a stack trace');
  if (/[\x00-\x08\x0b-\x1f\x7f]/.test(r.stderr.replace(/\n$/, ''))) found.push('a raw control character on stderr');
  if (r.stdout.trim() !== '') found.push(`stdout: ${r.stdout.slice(0, 200)}`);
  return found;
}

const setup = scriptedStacks();

describe('bad input: one `error:` line, exit 2, nothing started', () => {
  test(`${cases.length} malformed inputs across every command each print one error line and exit 2, and start no workflow`, async () => {
    expect(cases.length).toBeGreaterThan(100);
    const results = await pool(cases, 4, async ([title, args, extra]) => ({
      title,
      r: await runCli(args, { ...env(), ...extra }, 60_000),
    }));
    const failures = results.flatMap(({ title, r }) => {
      const p = problems(r);
      return p.length ? [`${title}: ${p.join('; ')}\n    stderr: ${JSON.stringify(r.stderr.slice(0, 300))}`] : [];
    });
    expect(failures).toEqual([]);
    // Nothing reached the task queue: no run, event run or discovery was started by any of them.
    const connection = await Connection.connect({ address: testAddress() });
    try {
      const temporal = new Client({ connection });
      const started: string[] = [];
      for await (const wf of temporal.workflow.list({ query: `TaskQueue = '${queue}'` })) started.push(wf.workflowId);
      expect(started).toEqual([]);
    } finally {
      await connection.close();
    }
  }, 240_000);

  test('the messages say what is wrong in words a user can act on', async () => {
    const said = async (args: string[], extra: Record<string, string> = {}) =>
      (await runCli(args, { ...env(), ...extra })).stderr.trim();
    expect(await said([...RUN, '--input', deep(5000)])).toBe(
      'error: --input nests arrays and objects more than 64 deep: at most 64 levels are accepted',
    );
    expect(await said([...RUN, '--input', `@${path.join(files, 'big.json')}`])).toMatch(
      /^error: --input \(the file .*big\.json\) is larger than 524288 bytes \(512 KiB\), the most accepted$/,
    );
    expect(await said([...RUN, '--input', INPUT, '--id', long(1001)])).toBe(
      'error: run id is 1001 characters long: at most 200 are allowed',
    );
    expect(await said([...RUN, '--input', INPUT, '--id', 'a\nb'])).toMatch(
      /^error: run id "a\\nb" has a control or invisible character/,
    );
    expect(await said(['list'], { TEMPORAL_NAMESPACE: 'no-such-namespace-bad-input' })).toMatch(
      /^error: namespace "no-such-namespace-bad-input" does not exist on the Temporal server at .*: set TEMPORAL_NAMESPACE/,
    );
    expect(await said([...RUN, '--input', INPUT, '--jsn'])).toBe(
      "error: unknown option '--jsn' (Did you mean --json?)",
    );
    expect(await said(['status', 'no-such-run/at-all'])).toBe(
      'error: no run with id no-such-run/at-all: check the id with `loopwright list`',
    );
  });

  test('a list filter with a backslash or a quote is a filter like any other: it matches no run, and exits 0', async () => {
    for (const loop of ['x\\', "x' OR LoopName != '", "x\\' OR 1=1"]) {
      const r = await runCli(['list', '--loop', loop], env());
      expect({ loop, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        loop,
        code: 0,
        stdout: 'no runs match\n',
        stderr: '',
      });
    }
  });

  test('--help still prints the usage, on stdout, and exits 0', async () => {
    const r = await runCli(['run', '--help'], env());
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: loopwright run/);
    expect(r.stderr).toBe('');
  });

  test('approve and cancel on a run that has ended name how it ended: canceled, terminated', async () => {
    const { stack: s } = await setup.with(
      'bad-input-ended',
      script(workerSays(1, 'long answer'), judgeSays(1, false, ['short'], 'Be short.')),
    );
    const canceled = await s.run(async () => {
      const { workflowId } = await s.client.run('evaluate-optimize', {
        task: 'Say hi.',
        rubric: ['short'],
        maxAttempts: 1,
      });
      await s.client.wait(workflowId);
      expect((await s.client.cancel(workflowId)).state).toBe('canceled');
      return workflowId;
    });
    const client = await LoopwrightClient.connect({
      env: clientEnv({ LOOPWRIGHT_TASK_QUEUE: uniqueQueue('bad-input-term') }),
    });
    let terminated: string;
    try {
      ({ workflowId: terminated } = await client.run('evaluate-optimize', {
        task: 'Say hi.',
        rubric: ['short'],
        maxAttempts: 1,
      }));
      await client.temporal.workflow.getHandle(terminated).terminate('test');
    } finally {
      await client.close();
    }
    const expectOne = async (args: string[], pattern: RegExp) => {
      const r = await runCli(args, env());
      expect(problems(r)).toEqual([]);
      expect(r.stderr.trim()).toMatch(pattern);
    };
    await expectOne(['approve', canceled, '--by', 'bob'], /the run has ended \(canceled\)$/);
    await expectOne(['cancel', canceled], /has already ended \(canceled\)$/);
    await expectOne(['reject', terminated, '--by', 'bob'], /the run has ended \(terminated\)$/);
    await expectOne(['cancel', terminated], /has already ended \(terminated\)$/);
  });
});
