/**
 * Captures the fixtures of the test-results parsers (test/fixtures/test-results/) from the real
 * runners on this machine: the sample projects beside them (`<runner>/sample`: passing, failing,
 * skipped, todo, nested-suite and failed-to-load tests), run with exactly the flags runTests adds
 * (activities/tests/invocation.ts), without the sandbox. Run it from the repository root:
 *   npm run build && node dist/scripts/capture-runner-output.js [node jest vitest pytest go junit]
 * The samples are written to /tmp/loopwright-runner-samples/<runner> (a fixed path, so the
 * fixtures' absolute paths stay the same when they are captured again). vitest is not a
 * dependency of Loopwright: install it in a scratch folder first
 * (`npm install --prefix /tmp/loopwright-vitest vitest@3.2.4`, or set VITEST_DIR). JUnit from
 * another producer: Maven Surefire (`mvn` on PATH, Maven Central reachable for its plugins).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestRunner } from '../common/test-results';
import { RESULTS_FILES, runnerInvocation } from '../activities/tests/invocation';
import { nodeReporterSource } from '../activities/tests/node-reporter';

const ROOT = process.cwd();
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'test-results');
const SAMPLES_DIR = '/tmp/loopwright-runner-samples';
const VITEST_DIR = process.env.VITEST_DIR ?? '/tmp/loopwright-vitest';

/** A fresh copy of the sample project(s) `test/fixtures/test-results/<from...>` at `dir`. */
function lay(dir: string, ...from: string[]): void {
  rmSync(dir, { recursive: true, force: true });
  for (const f of from) cpSync(path.join(FIXTURES, f), dir, { recursive: true });
}

function version(cmd: string, args: string[], cwd = ROOT): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n')[0] || 'unknown';
}

/** Runs `command` the way runTests would (its flags, its env), unsandboxed, and returns the results file. */
function capture(runner: Exclude<TestRunner, 'junit'>, dir: string, command: string): string {
  const resultsDir = path.join(dir, '..', `${path.basename(dir)}-results`);
  rmSync(resultsDir, { recursive: true, force: true });
  mkdirSync(resultsDir, { recursive: true });
  const reporterFile = path.join(resultsDir, 'reporter.mjs');
  writeFileSync(reporterFile, nodeReporterSource(path.join(resultsDir, RESULTS_FILES.node)));
  const inv = runnerInvocation(runner, command, { resultsDir, reporterFile });
  const r = spawnSync('sh', ['-c', inv.command], {
    cwd: dir,
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', CI: 'true', ...inv.env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  console.log(`${runner}: \`${command}\` in ${dir} exited ${r.status}`);
  if (!existsSync(inv.resultsFile!)) throw new Error(`${runner} wrote no results: ${r.stdout}${r.stderr}`);
  return inv.resultsFile!;
}

const notes: string[] = [];
const capturers: Record<string, () => void> = {
  node() {
    const dir = path.join(SAMPLES_DIR, 'node');
    lay(dir, 'node/sample');
    const out = capture('node', dir, 'node --test');
    mkdirSync(path.join(FIXTURES, 'node'), { recursive: true });
    copyFileSync(out, path.join(FIXTURES, 'node', 'events.jsonl'));
    notes.push(
      `- node/events.jsonl: \`node --test\` in ${dir} (${process.version}), with Loopwright's reporter (NODE_OPTIONS, as runTests runs it)`,
    );
  },
  jest() {
    const dir = path.join(SAMPLES_DIR, 'jest');
    lay(dir, 'jest/sample');
    const jest = path.join(ROOT, 'node_modules', '.bin', 'jest');
    const out = capture('jest', dir, `${jest} --ci`);
    mkdirSync(path.join(FIXTURES, 'jest'), { recursive: true });
    copyFileSync(out, path.join(FIXTURES, 'jest', 'results.json'));
    notes.push(
      `- jest/results.json: \`jest --ci --json --outputFile=… --testLocationInResults\` in ${dir} (jest ${version(jest, ['--version'])})`,
    );
  },
  vitest() {
    const bin = path.join(VITEST_DIR, 'node_modules', '.bin', 'vitest');
    if (!existsSync(bin))
      throw new Error(`vitest is not installed in ${VITEST_DIR}: npm install --prefix ${VITEST_DIR} vitest@3.2.4`);
    const dir = path.join(SAMPLES_DIR, 'vitest');
    lay(dir, 'vitest/sample');
    symlinkSync(path.join(VITEST_DIR, 'node_modules'), path.join(dir, 'node_modules'));
    const out = capture('vitest', dir, `${bin} run`);
    mkdirSync(path.join(FIXTURES, 'vitest'), { recursive: true });
    copyFileSync(out, path.join(FIXTURES, 'vitest', 'results.json'));
    notes.push(
      `- vitest/results.json: \`vitest run --reporter=default --reporter=json --outputFile.json=… --includeTaskLocation\` in ${dir} (vitest ${version(bin, ['--version'])})`,
    );
  },
  pytest() {
    const dir = path.join(SAMPLES_DIR, 'pytest');
    const py = version('python3', ['--version']);
    const pytest = version('python3', ['-m', 'pytest', '--version']);
    mkdirSync(path.join(FIXTURES, 'pytest'), { recursive: true });
    lay(dir, 'pytest/sample');
    copyFileSync(
      capture('pytest', dir, 'python3 -m pytest -p no:cacheprovider'),
      path.join(FIXTURES, 'pytest', 'xunit1.xml'),
    );
    // The same tests in pytest's default dialect (xunit2: no file, no line), which a loop's own --junitxml may give.
    const xunit2 = path.join(SAMPLES_DIR, 'pytest-xunit2.xml');
    spawnSync('python3', ['-m', 'pytest', '-p', 'no:cacheprovider', `--junitxml=${xunit2}`], { cwd: dir });
    copyFileSync(xunit2, path.join(FIXTURES, 'pytest', 'xunit2.xml'));
    lay(dir, 'pytest/sample', 'pytest/sample-broken');
    copyFileSync(
      capture('pytest', dir, 'python3 -m pytest -p no:cacheprovider'),
      path.join(FIXTURES, 'pytest', 'collection-error.xml'),
    );
    lay(dir, 'pytest/sample');
    notes.push(
      `- pytest/xunit1.xml: \`python3 -m pytest -p no:cacheprovider --junitxml=… -o junit_family=xunit1\` in ${dir} (${pytest}, ${py})`,
    );
    notes.push(
      `- pytest/xunit2.xml: the same tests with pytest's default junit_family (xunit2: no file or line attributes)`,
    );
    notes.push(
      `- pytest/collection-error.xml: the same with tests/test_broken.py, a syntax error: pytest stops at collection and runs no test`,
    );
  },
  go() {
    const dir = path.join(SAMPLES_DIR, 'go');
    lay(dir, 'go/sample');
    const out = capture('go', dir, 'go test ./...');
    mkdirSync(path.join(FIXTURES, 'go'), { recursive: true });
    copyFileSync(out, path.join(FIXTURES, 'go', 'test.jsonl'));
    notes.push(`- go/test.jsonl: \`go test ./... -json\` in ${dir} (${version('go', ['version'])})`);
  },
  junit() {
    const dir = path.join(SAMPLES_DIR, 'maven');
    lay(dir, 'junit/maven-sample');
    const r = spawnSync('mvn', ['-B', '-q', 'test'], { cwd: dir, encoding: 'utf8', timeout: 600_000 });
    console.log(`junit: \`mvn -B -q test\` in ${dir} exited ${r.status}`);
    const reports = path.join(dir, 'target', 'surefire-reports');
    const target = path.join(FIXTURES, 'junit', 'surefire');
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target, { recursive: true });
    for (const f of readdirSync(reports).filter((f) => f.endsWith('.xml')))
      copyFileSync(path.join(reports, f), path.join(target, f));
    notes.push(
      `- junit/surefire/*.xml: \`mvn -B -q test\` in ${dir} (${version('mvn', ['-v']).replace(/\x1b\[[0-9;]*m/g, '')}, maven-surefire-plugin 3.5.2, JUnit Jupiter 5.11.4, ${version('java', ['-version'])})`,
    );
  },
};

const wanted = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(capturers);
for (const name of wanted) {
  const fn = capturers[name];
  if (!fn) throw new Error(`no capturer ${name}: use ${Object.keys(capturers).join(', ')}`);
  fn();
}
console.log(`\nCaptured (paste into ${path.relative(ROOT, path.join(FIXTURES, 'README.md'))}):\n${notes.join('\n')}`);
