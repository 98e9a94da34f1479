import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { blobRef, canonicalJson } from '../../../activities/transcript/canonical-json';
import { createFileBlobStore } from '../../../activities/transcript/store';
import { elideOldToolResults, transcriptChars, type TranscriptMessage } from '../../../common/context';
import { must } from '../../../common/must';

/** A deep copy of `value` with every object's keys in an order drawn from `seed`. */
function reorderKeys(value: unknown, seed: number): unknown {
  let state = seed >>> 0 || 1;
  const next = (): number => (state = (Math.imul(state, 1103515245) + 12345) >>> 0);
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i > 0; i--) {
      const j = next() % (i + 1);
      [keys[i], keys[j]] = [must(keys[j], 'j <= i'), must(keys[i], 'i < keys.length')];
    }
    // fromEntries keeps a "__proto__" key as data, as JSON.parse would.
    return Object.fromEntries(keys.map((k) => [k, walk((v as Record<string, unknown>)[k])]));
  };
  return walk(value);
}

describe('canonical refs (property)', () => {
  test('reordering the keys of any JSON value changes neither its canonical JSON nor its ref', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
        const reordered = reorderKeys(value, seed);
        expect(canonicalJson(reordered)).toBe(canonicalJson(value));
        expect(blobRef(reordered)).toBe(blobRef(value));
      }),
      { numRuns: 300 },
    );
  });

  test('canonical JSON parses back to the value that JSON.stringify would give', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });

  test('the store gives key-reordered values one ref and reads back an equal value', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'loopwright-blobs-prop-'));
    try {
      const store = createFileBlobStore(dir);
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 3 }), fc.integer(), async (value, seed) => {
          const ref = await store.put(value);
          expect(await store.put(reorderKeys(value, seed))).toBe(ref);
          expect(ref).toBe(blobRef(value));
          expect(await createFileBlobStore(dir).get(ref)).toEqual(JSON.parse(JSON.stringify(value)));
        }),
        { numRuns: 50 },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const block = fc.oneof(
  fc.record({ type: fc.constant('text' as const), text: fc.string({ maxLength: 200 }) }),
  fc.record({
    type: fc.constant('tool_result' as const),
    tool_use_id: fc.string({ maxLength: 5 }),
    content: fc.string({ maxLength: 400 }),
  }),
);
const message: fc.Arbitrary<TranscriptMessage> = fc.record({
  role: fc.constantFrom('user' as const, 'assistant' as const),
  content: fc.oneof(fc.string({ maxLength: 50 }), fc.array(block, { maxLength: 4 })),
});

describe('elideOldToolResults (property)', () => {
  test('never grows the transcript, never mutates its input, and fits the budget unless nothing old is left to elide', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 12 }), fc.nat(4000), fc.nat(3), (messages, maxChars, keep) => {
        const before = structuredClone(messages);
        const out = elideOldToolResults(messages, maxChars, keep);
        expect(messages).toEqual(before);
        expect(out.messages).toHaveLength(messages.length);
        expect(transcriptChars(out.messages)).toBeLessThanOrEqual(transcriptChars(messages));
        if (transcriptChars(out.messages) > maxChars)
          expect(elideOldToolResults(out.messages, maxChars, keep).elided).toBe(0);
      }),
    );
  });
});
