import { END_MARKER } from './results-channel';

/**
 * The reporter module Loopwright gives node's test runner (`--test-reporter=<file>`, through
 * NODE_OPTIONS so that `npm test` and `node --test some/dir` work alike). Node's own junit and
 * tap reporters do not say which file a passing test is in; a custom reporter receives every
 * `test:start`, `test:pass` and `test:fail` event with `file`, `line`, `name`, `nesting`, `skip`
 * and `todo` (checked on Node 20.20). It sends one JSON line per event, whose destination is
 * written into the module (no variable of the command's environment names it: the gate's runs
 * carry no marker a test could look for beyond the reporter in NODE_OPTIONS);
 * {@link parseNodeEvents} turns the lines into results.
 *
 * The destination is the worker's results socket (results-channel.ts: what was sent cannot be
 * rewritten by the tests, which run in the same sandbox), connected as the module loads, which
 * `node --test` awaits before it runs a test file; it ends with an end marker. A plain file
 * (appended to) is for tools that capture a runner's output outside the gate.
 *
 * Only the top-level runner writes: a process inside a test run (`NODE_TEST_CONTEXT` set) writes
 * nothing, so a test that starts a runner of its own does not mix its tests into the results.
 * Several runners started one after the other by the command (`node --test a && node --test b`)
 * all send.
 */

/** Characters kept of a failure message. */
export const NODE_MESSAGE_CAP = 2000;

/** The module's source (ES module, no dependencies but node:fs and node:net), sending to `target`. */
export function nodeReporterSource(target: string | { socket: string }): string {
  const socket = typeof target === 'string' ? undefined : target.socket;
  const open = socket
    ? `import { createConnection } from 'node:net';

const socket = writes
  ? await new Promise((resolve) => {
      const s = createConnection(${JSON.stringify(socket)});
      s.once('connect', () => resolve(s));
      s.once('error', () => resolve(undefined));
    })
  : undefined;
socket?.on('error', () => {});
const send = (line) => socket?.write(line + '\\n');
const finish = () =>
  socket &&
  new Promise((resolve) => {
    socket.once('close', resolve);
    socket.end(${JSON.stringify(`${END_MARKER}\n`)});
  });`
    : `import { appendFileSync } from 'node:fs';

const target = ${JSON.stringify(target)};
const send = (line) => {
  try {
    appendFileSync(target, line + '\\n');
  } catch {
    // The results folder is gone (the run was cancelled): nothing to report to.
  }
};
const finish = () => undefined;`;
  return `// A test reporter written for one test run.
const writes = !process.env.NODE_TEST_CONTEXT;
${open}
const KEPT = new Set(['test:start', 'test:pass', 'test:fail']);

function message(error) {
  if (!error) return undefined;
  const inner = error.cause && typeof error.cause === 'object' ? error.cause : error;
  const text = typeof inner.message === 'string' ? inner.message : String(inner);
  return text.slice(0, ${NODE_MESSAGE_CAP});
}

export default async function* loopwrightReporter(source) {
  for await (const event of source) {
    if (!writes || !KEPT.has(event.type)) continue;
    const d = event.data || {};
    const record = { type: event.type, name: d.name, nesting: d.nesting, file: d.file, line: d.line };
    if (event.type !== 'test:start') {
      if (d.skip !== undefined && d.skip !== false) record.skip = d.skip;
      if (d.todo !== undefined && d.todo !== false) record.todo = d.todo;
      const details = d.details || {};
      if (details.type) record.kind = details.type;
      const error = details.error;
      if (error) {
        record.failureType = error.failureType;
        record.message = message(error);
      }
    }
    send(JSON.stringify(record));
  }
  if (writes) await finish();
}
`;
}
