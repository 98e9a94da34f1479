import { MAX_TEXT, UNPRINTABLE, type Decision } from './decision';
import { isDuration } from './duration';
import { checkEnum, checkNumber, checkString, isRecord, put, type Issues } from './shape-check';

/**
 * The workflow's check of a `decision` signal: what common/decision-schema.ts's
 * `DecisionSchema` accepts, without zod (see shape-check.ts). Accepts and refuses the same
 * values and returns the same decision (names and guidance trimmed, unknown fields dropped,
 * retry's attempts defaulted): test/common/shape-check.property.test.ts holds it to the schema.
 */
export function checkDecision(raw: unknown): { ok: true; decision: Decision } | { ok: false; issues: string[] } {
  const issues: Issues = [];
  const decision = read(raw, issues);
  return decision && issues.length === 0
    ? { ok: true, decision }
    : { ok: false, issues: issues.length > 0 ? issues : ['(root): not a decision'] };
}

const KINDS = ['approve', 'reject', 'extend', 'audit', 'retry'] as const;

function read(raw: unknown, issues: Issues): Decision | undefined {
  if (!isRecord(raw)) return void issues.push('(root): expected object');
  const kind = checkEnum(raw.kind, 'kind', KINDS, issues);
  if (!kind) return undefined;
  const id = checkString(
    raw.id,
    'id',
    {
      test: (s) =>
        /^[A-Za-z0-9._:-]{1,100}$/.test(s) ? undefined : 'a decision id is 1 to 100 letters, digits and ._:-',
    },
    issues,
  );
  const by = checkString(
    raw.by,
    'by',
    {
      trim: true,
      min: 1,
      minMessage: 'say who decides (--by NAME)',
      max: 100,
      maxMessage: 'a name is at most 100 characters',
      test: (s) => (UNPRINTABLE.test(s) ? 'a name may not contain control characters or line breaks' : undefined),
    },
    issues,
  );
  const text = (key: string) =>
    optional(raw[key], (v) =>
      checkString(v, key, { max: MAX_TEXT, maxMessage: `at most ${MAX_TEXT} characters` }, issues),
    );
  const signature = optional(raw.signature, (v) => checkString(v, 'signature', { max: 4096 }, issues));
  const base = { kind, id, by } as Record<string, unknown>;
  switch (kind) {
    case 'approve':
      put(put(base, 'note', text('note')), 'signature', signature);
      break;
    case 'reject':
      put(put(base, 'reason', text('reason')), 'signature', signature);
      break;
    case 'audit':
      base.verdict = checkEnum(raw.verdict, 'verdict', ['ok', 'bad'] as const, issues);
      put(put(base, 'note', text('note')), 'signature', signature);
      break;
    case 'retry':
      base.guidance = checkString(
        raw.guidance,
        'guidance',
        {
          trim: true,
          min: 1,
          minMessage: 'retry needs guidance for the next attempt',
          max: MAX_TEXT,
          maxMessage: `at most ${MAX_TEXT} characters`,
        },
        issues,
      );
      base.attempts =
        raw.attempts === undefined ? 1 : checkNumber(raw.attempts, 'attempts', { int: true, min: 1, max: 20 }, issues);
      put(base, 'signature', signature);
      break;
    case 'extend': {
      const before = issues.length;
      put(
        base,
        'attempts',
        optional(raw.attempts, (v) => checkNumber(v, 'attempts', { int: true, min: 1, max: 100 }, issues)),
      );
      put(
        base,
        'tokens',
        optional(raw.tokens, (v) => checkNumber(v, 'tokens', { int: true, min: 0, minExclusive: true }, issues)),
      );
      put(
        base,
        'costUsd',
        optional(raw.costUsd, (v) =>
          checkNumber(v, 'costUsd', { min: 0.000001, minMessage: 'extend the cost by at least $0.000001' }, issues),
        ),
      );
      put(
        base,
        'wallTime',
        optional(raw.wallTime, (v) =>
          checkString(
            v,
            'wallTime',
            { test: (s) => (isDuration(s) ? undefined : 'expected a duration such as 30s, 5m, 24h or 7d') },
            issues,
          ),
        ),
      );
      put(put(base, 'note', text('note')), 'signature', signature);
      const some = ['attempts', 'tokens', 'costUsd', 'wallTime'].some((k) => raw[k] !== undefined);
      if (issues.length === before && !some)
        issues.push('(root): say what to extend: attempts, tokens, costUsd or wallTime');
      break;
    }
  }
  return issues.length === 0 ? (base as Decision) : undefined;
}

/** An optional field: undefined stays undefined, anything else is checked. */
function optional<T>(value: unknown, check: (v: unknown) => T | undefined): T | undefined {
  return value === undefined ? undefined : check(value);
}
