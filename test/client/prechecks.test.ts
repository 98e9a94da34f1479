import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { durationOpt } from '../../client/cli-checks';
import { errorLine } from '../../client/cli-errors';
import { parseInputArg } from '../../client/commands/run';
import { checkId, checkLookupId, checkName } from '../../client/ids';
import {
  checkArgText,
  checkInputValue,
  decodeUtf8,
  jsonTooDeep,
  LIMITS,
  parseJsonText,
  portOpt,
  quote,
  wholeNumberOpt,
} from '../../client/prechecks';
import { serviceError } from '../../client/service-errors';
import { allOf, clause, oneOf, queryLiteral } from '../../common/visibility-query';
import { readConfig } from '../../common/config';
import { ConfigError, UsageError } from '../../common/errors';

const usage = (fn: () => unknown): UsageError => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    expect((err as UsageError).message).not.toMatch(/[\n\r\x1b]/);
    return err as UsageError;
  }
  throw new Error('expected a UsageError');
};
const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('JSON prechecks', () => {
  test('nesting is measured without recursion, and brackets inside strings do not count', () => {
    expect(jsonTooDeep(deep(64))).toBe(false);
    expect(jsonTooDeep(deep(65))).toBe(true);
    expect(jsonTooDeep(deep(1_000_000))).toBe(true);
    expect(jsonTooDeep(JSON.stringify({ a: '[[[[[[[['.repeat(100) }))).toBe(false);
    expect(jsonTooDeep(JSON.stringify({ a: '\\"[[[['.repeat(100) }))).toBe(false);
    expect(jsonTooDeep(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`)).toBe(true);
  });

  test('an input over 512 KiB, nested over 64 deep or not JSON is a one-line UsageError', () => {
    expect(parseJsonText('{"a":[1,2]}', '--input')).toEqual({ a: [1, 2] });
    expect(usage(() => parseJsonText(JSON.stringify('x'.repeat(LIMITS.inputBytes)), '--input')).message).toMatch(
      /^--input is 524290 bytes: at most 524288 bytes \(512 KiB\) are accepted$/,
    );
    expect(usage(() => parseJsonText(deep(5000), '--input')).message).toBe(
      '--input nests arrays and objects more than 64 deep: at most 64 levels are accepted',
    );
    expect(usage(() => parseJsonText('{', '--input', { hint: 'pass JSON or @file' })).message).toMatch(
      /^--input is not valid JSON \(.+\): pass JSON or @file$/,
    );
    // Multi-byte characters count as the bytes they take.
    expect(() => parseJsonText(JSON.stringify('é'.repeat(LIMITS.inputBytes / 2)), '--input')).toThrow(/bytes: at most/);
  });

  test('an input file is read only up to the limit (a 3 MB file, /dev/zero) and must be UTF-8', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lw-prechecks-'));
    const big = path.join(dir, 'big.json');
    writeFileSync(big, JSON.stringify({ task: 'x'.repeat(3_000_000) }));
    expect(usage(() => parseInputArg(`@${big}`)).message).toMatch(/is larger than 524288 bytes/);
    expect(usage(() => parseInputArg('@/dev/zero')).message).toMatch(/is larger than 524288 bytes/);
    const latin1 = path.join(dir, 'latin1.json');
    writeFileSync(latin1, Buffer.from('{"t":"caf\xe9"}', 'latin1'));
    expect(usage(() => parseInputArg(`@${latin1}`)).message).toMatch(/is not valid UTF-8/);
    expect(usage(() => parseInputArg('@')).message).toBe('--input @ names no file: pass @path/to/input.json');
    expect(decodeUtf8(Buffer.from('{"t":"café"}'), 'x')).toBe('{"t":"café"}');
  });

  test('an input given as a value is held to the same limits', () => {
    let nested: unknown = 1;
    for (let i = 0; i < 100; i++) nested = [nested];
    expect(usage(() => checkInputValue(nested, 'the input')).message).toMatch(/more than 64 deep/);
    expect(usage(() => checkInputValue({ task: 'x'.repeat(LIMITS.inputBytes) }, 'the input')).message).toMatch(
      /bytes as JSON: at most/,
    );
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(usage(() => checkInputValue(circular, 'the input')).message).toMatch(/cannot be written as JSON/);
    expect(checkInputValue({ task: 't' }, 'the input')).toEqual({ task: 't' });
  });
});

describe('ids, names and text', () => {
  test('an id is non-empty, at most 200 characters (1000 to look up), one printable line', () => {
    expect(checkId('run id', 'fix-test/issue-42 ü')).toBe('fix-test/issue-42 ü');
    expect(usage(() => checkId('run id', '')).message).toBe('run id is empty: give an id such as my-loop/issue-42');
    expect(usage(() => checkId('run id', 'a'.repeat(201))).message).toBe(
      'run id is 201 characters long: at most 200 are allowed',
    );
    expect(checkLookupId('id', 'a'.repeat(1000))).toHaveLength(1000);
    expect(usage(() => checkLookupId('id', 'a'.repeat(1001))).message).toBe(
      'id is 1001 characters long: at most 1000 are allowed',
    );
    for (const bad of [
      'a\nb',
      'a\x1bb',
      'a\u202eb',
      'a\u200bb',
      'a\u00a0b',
      ' a',
      'a ',
      'a\ufffdb',
      'a\ue000b',
      'a\ud800b',
      'a\u2028b',
      'a\ufeffb',
    ])
      usage(() => checkId('run id', bad));
  });

  test('a name is trimmed and must not be blank', () => {
    expect(checkName('--by', '  alice ')).toBe('alice');
    expect(usage(() => checkName('--by', '   ')).message).toBe('--by is empty: give your name, e.g. --by alice');
  });

  test('free text keeps newlines and tabs, and refuses other controls, broken Unicode and more than 16 KiB', () => {
    expect(checkArgText('--note', 'line 1\n\tline 2 ü')).toBe('line 1\n\tline 2 ü');
    expect(usage(() => checkArgText('--note', 'a\x1b[2J')).message).toBe(
      '--note has a control character (\\x1b at position 2): use printable text',
    );
    expect(usage(() => checkArgText('--note', 'a\ud800')).message).toMatch(/^--note is not valid Unicode text/);
    expect(usage(() => checkArgText('--note', 'x'.repeat(LIMITS.argChars + 1))).message).toBe(
      `--note is ${LIMITS.argChars + 1} characters long: at most ${LIMITS.argChars} are accepted`,
    );
  });

  test('quoted values are escaped and cut short', () => {
    expect(quote('a\nb')).toBe('"a\\nb"');
    expect(quote('x'.repeat(100), 10)).toBe('"xxxxxxxxxx…(100 characters)"');
  });
});

describe('numbers, ports and durations', () => {
  test('whole numbers, ports and durations within their ranges', () => {
    expect(wholeNumberOpt('--limit', '10', 1, 100)).toBe(10);
    for (const bad of ['0', '101', '-1', '2.5', '1e3', 'ten', '', '0x10'])
      usage(() => wholeNumberOpt('--limit', bad, 1, 100));
    expect(portOpt('0')).toBe(0);
    expect(portOpt(undefined)).toBeUndefined();
    for (const bad of ['65536', '-1', '80.5', 'http', '1e3']) usage(() => portOpt(bad));
    expect(durationOpt('--since', '7d')).toBe(7 * 86_400_000);
    for (const bad of ['0s', 'forever', '99999999999999d', '-1h']) usage(() => durationOpt('--since', bad));
  });
});

describe('the environment', () => {
  test('TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and LOOPWRIGHT_TASK_QUEUE are checked; empty means the default', () => {
    expect(readConfig({})).toMatchObject({
      temporalAddress: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'loopwright',
    });
    expect(
      readConfig({
        TEMPORAL_ADDRESS: '[::1]:7233',
        TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
        LOOPWRIGHT_TASK_QUEUE: 'test-x-1',
      }),
    ).toMatchObject({ temporalAddress: '[::1]:7233', namespace: 'my-ns.a1b2c' });
    expect(readConfig({ TEMPORAL_ADDRESS: ' ', TEMPORAL_NAMESPACE: '' })).toMatchObject({
      temporalAddress: 'localhost:7233',
      namespace: 'default',
    });
    const bad: Array<Record<string, string>> = [
      { TEMPORAL_ADDRESS: 'http://localhost:7233' },
      { TEMPORAL_ADDRESS: 'localhost:99999' },
      { TEMPORAL_ADDRESS: 'a b:1' },
      { TEMPORAL_ADDRESS: 'localhost:7233\nx' },
      { TEMPORAL_NAMESPACE: 'a b' },
      { TEMPORAL_NAMESPACE: 'x'.repeat(300) },
      { TEMPORAL_NAMESPACE: 'ns\x1b' },
      { LOOPWRIGHT_TASK_QUEUE: 'q\nx' },
      { LOOPWRIGHT_TASK_QUEUE: 'x'.repeat(201) },
      { LOOPWRIGHT_WORKER_MODEL: 'a b' },
    ];
    for (const env of bad) {
      expect(() => readConfig(env)).toThrow(ConfigError);
      try {
        readConfig(env);
      } catch (err) {
        expect((err as Error).message).not.toMatch(/[\n\x1b]/);
      }
    }
  });
});

describe('errors as one line', () => {
  const ctx = { address: 'localhost:7233', namespace: 'nope' };
  const grpc = (code: number, details: string) =>
    Object.assign(new Error(`${code} X: ${details}`), { code, details, metadata: { get: () => [] } });

  test('Temporal service errors are mapped: input and config exit 2, server faults exit 1', () => {
    expect(serviceError(grpc(5, 'Namespace nope is not found.'), ctx)).toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/^namespace "nope" does not exist/),
    });
    expect(serviceError(grpc(3, 'invalid query: unable to parse'), ctx)).toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/refused the list filter/),
    });
    expect(serviceError(grpc(3, 'Blob data size exceeds limit.'), ctx)).toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/too large/),
    });
    expect(serviceError(grpc(8, 'Received message larger than max (5000000 vs. 4194304)'), ctx)).toMatchObject({
      exitCode: 2,
    });
    expect(serviceError(grpc(14, 'No connection established'), ctx)).toMatchObject({
      exitCode: 2,
      message: expect.stringMatching(/^cannot reach the Temporal server/),
    });
    expect(serviceError(grpc(16, 'bad token'), ctx)).toMatchObject({ exitCode: 2 });
    expect(serviceError(grpc(13, 'boom'), ctx)).toMatchObject({ exitCode: 1 });
    expect(serviceError(new TypeError('x'), ctx)).toBeUndefined();
  });

  test('an unexpected error is one line, exit 1, with its stack only under LOOPWRIGHT_DEBUG=1', () => {
    const err = new RangeError('Maximum call stack size exceeded');
    expect(errorLine(err, ctx, {})).toEqual({
      lines: [
        'error: internal error: RangeError: Maximum call stack size exceeded (set LOOPWRIGHT_DEBUG=1 to see where)',
      ],
      code: 1,
    });
    const debug = errorLine(err, ctx, { LOOPWRIGHT_DEBUG: '1' })!;
    expect(debug.lines[0]).toBe('error: internal error: RangeError: Maximum call stack size exceeded');
    expect(debug.lines.length).toBeGreaterThan(1);
    const long = errorLine(new UsageError(`bad ${'x'.repeat(5000)}\nend`), ctx, {})!;
    expect(long.lines).toHaveLength(1);
    expect(long.lines[0]?.length).toBeLessThanOrEqual(1100);
    expect(long.code).toBe(2);
  });

  test('visibility query values are escaped literals', () => {
    expect(queryLiteral('x\\')).toBe("'x\\\\'");
    expect(queryLiteral("a' OR 'b")).toBe("'a\\' OR \\'b'");
    expect(allOf(clause('LoopName', 'x\\'), undefined, false, clause('LoopState', 'running'))).toBe(
      "LoopName = 'x\\\\' AND LoopState = 'running'",
    );
    expect(oneOf('WorkflowType', ['loopWorkflowV2', "x') OR ('1"])).toBe(
      "WorkflowType IN ('loopWorkflowV2', 'x\\') OR (\\'1')",
    );
  });
});
