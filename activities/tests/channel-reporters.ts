import { END_MARKER } from './results-channel';

/**
 * What jest, vitest, pytest and go send their results through: the worker's results socket
 * (results-channel.ts), as node's reporter does (node-reporter.ts), never a file in a folder the
 * run can write. A results file there was no evidence: a process of the run (the code under test,
 * in a child; a background process that waits for the runner to write it) could make it before
 * the runner, or rewrite it after, with every test passing.
 *
 * Each module here is written for one run by the worker, read-only in the sandbox, and connects
 * to the socket before the runner runs any code of the repository's: jest's reporter as jest
 * sets up its reporters (before any test file; only base's globalSetup, in jest's own process,
 * runs earlier), pytest's plugin as `-p` imports it (before conftest.py and collection), go's
 * wrapper before it starts the command. It holds that connection to the end, and sends the same
 * report the runner would have written to the file (jest's `--json`, vitest's json reporter,
 * pytest's `--junitxml`, go's `-json` stream), then the end marker. Another process of the run
 * that connects meanwhile is cut and the run is `tampered`; so is a runner whose connection
 * closes without the end marker (killed).
 */

/** Characters kept of a jest or vitest failure message. */
const MESSAGE_CAP = 20_000;

/** The connection, as a promise made when the module loads (node modules: jest's, vitest's, go's). */
function connectSource(socket: string): string {
  return `const connected = new Promise((resolve) => {
  const s = createConnection(${JSON.stringify(socket)});
  s.once('connect', () => resolve(s));
  s.once('error', () => resolve(undefined));
});
let socket;
let finished = false;
connected.then((s) => {
  socket = s;
  s?.on('error', () => {});
});
// The runner's own process ends without a report (a test file called process.exit): the end marker
// alone, so the run has no results rather than a runner cut off. A process killed sends nothing.
process.once('exit', () => {
  if (!finished) socket?.end(${JSON.stringify(`${END_MARKER}
`)});
});
/** Sends \`text\` and the end marker, and waits until the worker has it all. */
async function finish(text) {
  const s = await connected;
  if (!s || finished) return;
  finished = true;
  await new Promise((resolve) => {
    s.once('close', resolve);
    if (text) s.write(text.endsWith('\\n') ? text : text + '\\n');
    s.end(${JSON.stringify(`${END_MARKER}\n`)});
  });
}`;
}

/**
 * jest's reporter (CommonJS, `--reporters=<file>`): at the end of the run it sends what `--json`
 * would write (formatTestResults of @jest/test-result: per file its path, status, message and
 * tests), with only the fields the parser reads.
 */
export function jestReporterSource(socket: string): string {
  return `'use strict';
// A test reporter written for one test run.
const { createConnection } = require('node:net');

${connectSource(socket)}

const clip = (m) => (typeof m === 'string' && m.length > ${MESSAGE_CAP} ? m.slice(0, ${MESSAGE_CAP}) : m);

function test(a) {
  return {
    ancestorTitles: a.ancestorTitles,
    title: a.title,
    fullName: a.fullName,
    status: a.status,
    location: a.location,
    failureMessages: (a.failureMessages || []).map(clip),
  };
}

function file(r) {
  const tests = (r.testResults || []).map(test);
  const message = clip(r.failureMessage ?? (r.testExecError ? r.testExecError.message : '') ?? '');
  const status = r.testExecError
    ? 'failed'
    : r.skipped
      ? 'skipped'
      : r.numFailingTests === 0
        ? r.numPendingTests === 0
          ? 'passed'
          : 'focused'
        : 'failed';
  return { name: r.testFilePath, status, message, assertionResults: tests };
}

class LoopwrightReporter {
  async onRunStart() {
    await connected;
  }
  async onRunComplete(_contexts, results) {
    const doc = {
      success: results.success,
      numTotalTests: results.numTotalTests,
      numFailedTests: results.numFailedTests,
      testResults: (results.testResults || []).map(file),
    };
    await finish(JSON.stringify(doc));
  }
  getLastError() {
    return undefined;
  }
}
module.exports = LoopwrightReporter;
`;
}

/**
 * vitest's reporter (ES module, `--reporter=<file>`): vitest's own json reporter
 * (`vitest/reporters`, loaded from vitest's own folder) makes the report, and this sends it
 * instead of writing it. It connects as vitest loads it, before any test file runs.
 */
export function vitestReporterSource(socket: string): string {
  return `// A test reporter written for one test run.
import { createConnection } from 'node:net';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

${connectSource(socket)}

export default class LoopwrightReporter {
  onInit(ctx) {
    this.ctx = ctx;
    this.ready = (async () => {
      await connected;
      // vitest's own json reporter: from the vitest that runs (its bin), else from the project's node_modules.
      const from = [];
      try {
        from.push(realpathSync(process.argv[1]));
      } catch {}
      from.push(ctx.config.root + '/package.json');
      let found;
      for (const f of from) {
        try {
          found = createRequire(f).resolve('vitest/reporters');
          break;
        } catch {}
      }
      if (!found) throw new Error('vitest/reporters not found');
      const { JsonReporter } = await import(pathToFileURL(found).href);
      const json = new JsonReporter({});
      json.writeReport = async (report) => {
        this.report = report;
      };
      json.onInit(ctx);
      this.json = json;
    })().catch((err) => {
      this.error = err;
    });
  }
  async onTestRunStart(...args) {
    await this.ready;
    return this.json?.onTestRunStart?.(...args);
  }
  async onTestRunEnd(...args) {
    await this.ready;
    if (this.json?.onTestRunEnd) {
      await this.json.onTestRunEnd(...args);
      await finish(this.report);
    }
  }
  async onFinished(...args) {
    await this.ready;
    if (!this.json) {
      // No report to send: the run has no results (and says why), rather than a connection left open.
      process.stderr.write('loopwright: vitest json reporter unavailable: ' + (this.error?.message ?? 'unknown') + '\\n');
      await finish('');
    } else if (!this.json.onTestRunEnd) {
      await this.json.onFinished?.(...args);
      await finish(this.report);
    }
  }
}
`;
}

/**
 * pytest's plugin (`-p <module>`, its folder on PYTHONPATH): it connects as it is imported, and
 * sends the JUnit XML of pytest's own junitxml plugin (`--junitxml=<path in its read-only
 * folder>`), whose file it catches in memory as pytest's session ends. A pytest-xdist worker
 * (`PYTEST_XDIST_WORKER`) sends nothing: the controller reports its tests. A process that ends
 * without a session (a usage error) sends the end marker alone.
 */
export function pytestPluginSource(socket: string, reportPath: string): string {
  return `# A pytest plugin written for one test run.
import atexit as _atexit
import builtins as _builtins
import io as _io
import os as _os
import socket as _socket

import _pytest.junitxml as _junitxml
import pytest as _pytest

_END = ${JSON.stringify(`${END_MARKER}\n`)}.encode()
_REPORT = _os.path.normpath(${JSON.stringify(reportPath)})
_sock = None
if not _os.environ.get("PYTEST_XDIST_WORKER"):
    try:
        _sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        _sock.connect(${JSON.stringify(socket)})
    except OSError:
        _sock = None


def _send(data):
    global _sock
    s, _sock = _sock, None
    if s is None:
        return
    try:
        s.sendall(data + _END)
        s.shutdown(_socket.SHUT_WR)
        s.recv(1)
    except OSError:
        pass
    finally:
        s.close()


_atexit.register(_send, b"")


class _Report(_io.StringIO):
    def close(self):
        _send(self.getvalue().encode("utf-8") + b"\\n")
        super().close()


def _open(file, *args, **kwargs):
    if isinstance(file, str) and _os.path.normpath(_os.path.abspath(file)) == _REPORT:
        return _Report()
    return _builtins.open(file, *args, **kwargs)


@_pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session):
    _junitxml.open = _open
    try:
        yield
    finally:
        del _junitxml.open
`;
}

/**
 * go's wrapper (ES module, run by the worker's node): it connects, then runs `command` (the go
 * test command with `-json`) with its stdout a socket pair of its own, which no other process can
 * open (a socket is not reopened through /proc/<pid>/fd, as a pipe would be; go gives the test
 * binaries pipes of its own), and forwards that stream: at most `capBytes`.
 */
export function goWrapperSource(socket: string, capBytes: number): string {
  return `// A test runner wrapper written for one test run.
import { spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { constants } from 'node:os';

${connectSource(socket)}

const s = await connected;
const child = spawn('/bin/sh', ['-c', process.argv[2]], { stdio: ['inherit', 'pipe', 'inherit'] });
let sent = 0;
child.stdout.on('data', (chunk) => {
  if (sent > ${capBytes}) return;
  sent += chunk.length;
  s?.write(chunk);
});
const ended = new Promise((resolve) => child.stdout.once('close', resolve));
const [code, signal] = await new Promise((resolve) => child.once('exit', (c, sig) => resolve([c, sig])));
// What the command's own processes still write goes with it; a process left holding its stdout is not waited for.
await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 2000))]);
await finish('');
process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
`;
}
