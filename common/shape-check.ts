/**
 * Small checks of untrusted values for workflow code, which does not load zod: evaluating zod and
 * the schemas built on it costs every new workflow about 3 MB of heap and tens of milliseconds of
 * CPU, because the workflow sandbox evaluates its bundle's modules afresh for each run. The
 * edges (the CLI, the client, activities) validate with zod; a workflow checks the few values
 * that reach it straight from outside (a decision signal, a model's proposal) with these, and
 * property tests hold each such check to the zod schema it mirrors.
 *
 * Each check pushes `path: message` lines to `issues` and returns the value it accepts (a
 * string trimmed where the schema trims), or undefined.
 */
export type Issues = string[];

/** A plain object (not null, not an array), as zod's object schemas require. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The keys of `value` other than `known`: a strict schema refuses them. */
export function unknownKeys(value: Record<string, unknown>, known: readonly string[]): string[] {
  return Object.keys(value).filter((k) => !known.includes(k));
}

export interface StringRule {
  trim?: boolean;
  min?: number;
  max?: number;
  /** Messages for the length limits (default: zod's wording). */
  minMessage?: string;
  maxMessage?: string;
  /** Further rules on the (trimmed) text: a message when it breaks one. */
  test?: (text: string) => string | undefined;
}

export function checkString(value: unknown, path: string, rule: StringRule, issues: Issues): string | undefined {
  if (typeof value !== 'string') return fail(issues, path, `expected string, received ${typeName(value)}`);
  const text = rule.trim ? value.trim() : value;
  const before = issues.length;
  if (rule.min !== undefined && text.length < rule.min)
    issue(issues, path, rule.minMessage ?? `too small: expected string to have >=${rule.min} characters`);
  if (rule.max !== undefined && text.length > rule.max)
    issue(issues, path, rule.maxMessage ?? `too big: expected string to have <=${rule.max} characters`);
  const broken = rule.test?.(text);
  if (broken) issue(issues, path, broken);
  return issues.length === before ? text : undefined;
}

export interface NumberRule {
  int?: boolean;
  min?: number;
  max?: number;
  /** True: `min` itself is refused (zod's `positive()`). */
  minExclusive?: boolean;
  minMessage?: string;
}

export function checkNumber(value: unknown, path: string, rule: NumberRule, issues: Issues): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value))
    return fail(issues, path, `expected number, received ${typeName(value)}`);
  if (rule.int && !Number.isSafeInteger(value)) return fail(issues, path, 'expected int, received number');
  const before = issues.length;
  if (rule.min !== undefined && (rule.minExclusive ? value <= rule.min : value < rule.min)) {
    issue(
      issues,
      path,
      rule.minMessage ?? `too small: expected number to be ${rule.minExclusive ? '>' : '>='}${rule.min}`,
    );
  }
  if (rule.max !== undefined && value > rule.max) issue(issues, path, `too big: expected number to be <=${rule.max}`);
  return issues.length === before ? value : undefined;
}

export function checkEnum<T extends string>(
  value: unknown,
  path: string,
  options: readonly T[],
  issues: Issues,
): T | undefined {
  if (typeof value === 'string' && (options as readonly string[]).includes(value)) return value as T;
  return fail(issues, path, `expected one of ${options.map((o) => JSON.stringify(o)).join('|')}`);
}

/** Adds `key: value` to `out` when `value` is defined (an optional field that was given). */
export function put<T extends object>(out: T, key: string, value: unknown): T {
  if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  return out;
}

function issue(issues: Issues, path: string, message: string): void {
  issues.push(`${path || '(root)'}: ${message}`);
}

function fail(issues: Issues, path: string, message: string): undefined {
  issue(issues, path, message);
  return undefined;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return typeof value;
}
