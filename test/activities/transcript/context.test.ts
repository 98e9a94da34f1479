import {
  capToolOutput,
  elideOldToolResults,
  elisionMarker,
  transcriptChars,
  type TranscriptMessage,
} from '../../../common/context';

const REF = `sha256:${'f'.repeat(64)}`;

describe('capToolOutput', () => {
  test('text at or under the cap comes back unchanged', () => {
    expect(capToolOutput('', REF, 0)).toBe('');
    expect(capToolOutput('abc', REF, 3)).toBe('abc');
    expect(capToolOutput('abc', REF, 100)).toBe('abc');
  });

  test('one character over the cap keeps 2/3 head and 1/3 tail and says 1 character was cut', () => {
    const text = 'a'.repeat(60) + 'X' + 'b'.repeat(30);
    expect(capToolOutput(text, REF, 90)).toBe(
      `${'a'.repeat(60)}\n[… 1 characters cut; full output stored as ${REF}]\n${'b'.repeat(30)}`,
    );
  });

  test('a long output keeps exactly capChars of its own text around a marker naming the ref', () => {
    const text = Array.from({ length: 10_000 }, (_, i) => String(i % 10)).join('');
    const capped = capToolOutput(text, REF, 300);
    const [head, tail] = capped.split(`\n[… 9700 characters cut; full output stored as ${REF}]\n`);
    expect(head).toBe(text.slice(0, 200));
    expect(tail).toBe(text.slice(-100));
  });

  test('a cap of zero (or NaN) keeps only the marker', () => {
    expect(capToolOutput('hello', REF, 0)).toBe(`\n[… 5 characters cut; full output stored as ${REF}]\n`);
    expect(capToolOutput('hello', REF, Number.NaN)).toBe(`\n[… 5 characters cut; full output stored as ${REF}]\n`);
  });

  test('a cut never splits a surrogate pair', () => {
    const text = '\u{1F600}'.repeat(50); // 100 UTF-16 units
    const capped = capToolOutput(text, REF, 32); // head 21 and tail 11 would both split a pair
    expect(capped).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    expect(capped).toBe(
      `${'\u{1F600}'.repeat(10)}\n[… 70 characters cut; full output stored as ${REF}]\n${'\u{1F600}'.repeat(5)}`,
    );
  });
});

const result = (id: string, size: number): TranscriptMessage => ({
  role: 'user',
  content: [{ type: 'tool_result', tool_use_id: id, content: id.repeat(size) }],
});
const call = (id: string): TranscriptMessage => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'run', input: {} }],
});
/** task, then four tool turns of 1000 characters each: r1 (oldest) .. r4 (newest). */
const conversation: TranscriptMessage[] = [
  { role: 'user', content: 'fix the test' },
  call('1'),
  result('1', 1000),
  call('2'),
  result('2', 1000),
  call('3'),
  result('3', 1000),
  call('4'),
  result('4', 1000),
];
const contentOf = (m: TranscriptMessage): string =>
  typeof m.content === 'string'
    ? m.content
    : m.content.map((b) => (b.type === 'tool_result' ? b.content : '')).join('');

describe('transcriptChars', () => {
  test('counts strings, text, tool results, and tool names with their JSON input', () => {
    expect(transcriptChars([{ role: 'user', content: 'abc' }])).toBe(3);
    expect(
      transcriptChars([
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'ab' },
            { type: 'tool_use', id: 'x', name: 'run', input: { a: 1 } },
          ],
        },
      ]),
    ).toBe(2 + 3 + 7);
    expect(transcriptChars(conversation)).toBe(12 + 4 * (3 + 2) + 4000);
  });
});

describe('elideOldToolResults', () => {
  test('under budget it elides nothing and returns a new array with the same messages', () => {
    const out = elideOldToolResults(conversation, 10_000);
    expect(out.elided).toBe(0);
    expect(out.messages).not.toBe(conversation);
    expect(out.messages).toEqual(conversation);
  });

  test('over budget it elides the oldest results first, only as many as needed', () => {
    const out = elideOldToolResults(conversation, 3500);
    expect(out.elided).toBe(1);
    expect(out.messages.map(contentOf)).toEqual([
      'fix the test',
      '',
      elisionMarker(1000),
      '',
      '2'.repeat(1000),
      '',
      '3'.repeat(1000),
      '',
      '4'.repeat(1000),
    ]);
    expect(transcriptChars(out.messages)).toBeLessThanOrEqual(3500);
  });

  test('never elides results in the last keepLastTurns user messages, even if still over budget', () => {
    const out = elideOldToolResults(conversation, 0);
    expect(out.elided).toBe(2);
    expect(out.messages.map(contentOf).slice(-3)).toEqual(['3'.repeat(1000), '', '4'.repeat(1000)]);
    expect(elideOldToolResults(conversation, 0, 1).elided).toBe(3);
    expect(elideOldToolResults(conversation, 0, 0).elided).toBe(4);
    expect(elideOldToolResults(conversation, 0, 9).elided).toBe(0);
  });

  test('does not mutate its input and shares the messages it did not change', () => {
    const before = structuredClone(conversation);
    const out = elideOldToolResults(conversation, 0);
    expect(conversation).toEqual(before);
    expect(out.messages[0]).toBe(conversation[0]);
    expect(out.messages[2]).not.toBe(conversation[2]);
  });

  test('keeps the block fields other than content, and skips results the marker would not shorten', () => {
    const short: TranscriptMessage = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 's', content: 'ok', is_error: true }],
    };
    const out = elideOldToolResults([short, result('1', 1000), result('2', 10), result('3', 10)], 100);
    expect(out.messages[0]).toBe(short);
    expect(out.messages[1]?.content).toEqual([{ type: 'tool_result', tool_use_id: '1', content: elisionMarker(1000) }]);
    expect(out.elided).toBe(1);
  });

  test('eliding an elided transcript again changes nothing', () => {
    const once = elideOldToolResults(conversation, 0).messages;
    const twice = elideOldToolResults(once, 0);
    expect(twice.elided).toBe(0);
    expect(twice.messages).toEqual(once);
  });
});
