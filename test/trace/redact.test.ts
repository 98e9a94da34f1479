import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeReport } from '../../activities/reports';
import { redact, redactDeep, redactionFromEnv } from '../../common/redact';

describe('redact', () => {
  test.each([
    ['an Anthropic key', 'key sk-ant-api03-AbCdEf0123456789_xyz-QRS end', 'key [redacted] end'],
    ['an OpenAI-style key of 20+ characters', 'OPENAI=sk-proj0123456789abcdefghij', 'OPENAI=[redacted]'],
    ['a GitHub token', 'token ghp_0123456789abcdefghijABCDEFGHIJ0123', 'token [redacted]'],
    ['a Slack token', 'xoxb-1234567890-abcdefghij', '[redacted]'],
    ['an AWS access key id', 'aws AKIAIOSFODNN7EXAMPLE.', 'aws [redacted].'],
    [
      'a bearer token, keeping the scheme',
      'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc',
      'Authorization: Bearer [redacted]',
    ],
  ])('replaces %s with [redacted]', (_what, input, expected) => {
    expect(redact(input)).toBe(expected);
  });

  test.each([
    ['a short sk- word', 'ask-me about sk-short'],
    ['ordinary prose and hashes', 'the judge pinned sha256:defd943e036b528b6f4f09a1f8871da843cf85 for attempt 2'],
    ['the word bearer without a token', 'the bearer of bad news'],
  ])('leaves %s alone', (_what, input) => {
    expect(redact(input)).toBe(input);
  });

  test('redacts every string in nested objects and arrays, keeping numbers and nulls', () => {
    const value = { a: ['x sk-ant-0123456789abcdef', 3], b: { c: 'Bearer abcdefghijkl', d: null, e: true } };
    expect(redactDeep(value)).toEqual({ a: ['x [redacted]', 3], b: { c: 'Bearer [redacted]', d: null, e: true } });
  });
});

describe('redact by name and by value', () => {
  test.each([
    ['an env-style assignment', 'export API_KEY=abc123def456 now', 'export API_KEY=[redacted] now'],
    ['a YAML-style password', 'password: correct-horse', 'password: [redacted]'],
    ['a JSON token', '{"token": "tok_0123456789"}', '{"token": "[redacted]"}'],
    ['a client secret', 'client_secret=s3cr3t-value&x=1', 'client_secret=[redacted]&x=1'],
  ])('redacts the value of %s', (_what, input, expected) => {
    expect(redact(input)).toBe(expected);
  });

  test.each([
    ['token counts', 'max_tokens: 4096, tokens: 360'],
    ['a key that is not secret', 'key: value, sort_key=created'],
    ['a short value', 'token: abc'],
  ])('leaves %s alone', (_what, input) => {
    expect(redact(input)).toBe(input);
  });

  test('configured names are redacted wherever assigned, case-insensitively', () => {
    expect(redact('DB_PASS=hunter22 db_pass: hunter22 other=hunter22', { names: ['DB_PASS'] })).toBe(
      'DB_PASS=[redacted] db_pass: [redacted] other=hunter22',
    );
  });

  test('literal values are redacted on their own; short and boolean-like ones are not', () => {
    expect(
      redact('the key hunter2-s3cret leaked; flag disabled', { values: ['hunter2-s3cret', 'disabled', 'abc'] }),
    ).toBe('the key [redacted] leaked; flag disabled');
  });

  test("redactionFromEnv takes LOOPWRIGHT_REDACT's names and the values of secret-named and configured variables", () => {
    const r = redactionFromEnv({
      LOOPWRIGHT_REDACT: 'DB_PASS, OTHER',
      DB_PASS: 'pw-0123456',
      ANTHROPIC_API_KEY: 'sk-live-key',
      HOME: '/root',
      GITHUB_TOKEN: '',
    });
    expect(r.names).toEqual(['db_pass', 'other']);
    expect(r.values).toEqual(['pw-0123456', 'sk-live-key']);
  });
});

test('a report effect (writeReport) redacts its title and body with the run names and the worker environment', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'lw-report-redact-'));
  const saved = process.env.DB_PASS;
  process.env.DB_PASS = 'pw-0123456789';
  try {
    const written = writeReport({
      key: 'w/report/1',
      dir,
      item: 'item',
      title: 'leak sk-ant-api03-AAAAAAAAAAAA',
      markdown: 'db_pass: x1y2z3w4 and pw-0123456789 alone',
      workflowId: 'w',
      redact: ['DB_PASS'],
    });
    const text = readFileSync(written.path, 'utf8');
    expect(text).toContain('# leak [redacted]');
    expect(text).toContain('db_pass: [redacted] and [redacted] alone');
  } finally {
    if (saved === undefined) delete process.env.DB_PASS;
    else process.env.DB_PASS = saved;
  }
});
