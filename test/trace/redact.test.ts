import { redact, redactDeep } from '../../client/trace/redact';

describe('redact', () => {
  test.each([
    ['an Anthropic key', 'key sk-ant-api03-AbCdEf0123456789_xyz-QRS end', 'key [redacted] end'],
    ['an OpenAI-style key of 20+ characters', 'OPENAI=sk-proj0123456789abcdefghij', 'OPENAI=[redacted]'],
    ['a GitHub token', 'token ghp_0123456789abcdefghijABCDEFGHIJ0123', 'token [redacted]'],
    ['a Slack token', 'xoxb-1234567890-abcdefghij', '[redacted]'],
    ['an AWS access key id', 'aws AKIAIOSFODNN7EXAMPLE.', 'aws [redacted].'],
    ['a bearer token, keeping the scheme', 'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc', 'Authorization: Bearer [redacted]'],
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
