/**
 * `must(value, why)` returns `value` when it is defined and otherwise throws an error that says which
 * invariant broke. For an index the code has already proved in range (a regex group that must have
 * matched, an array checked non-empty) where restructuring would not read better; an index that can
 * really be out of range is handled where it is read, with a default or an error for the user.
 */
export function must<T>(value: T | undefined, why: string): T {
  if (value === undefined) throw new Error(`internal error: ${why}`);
  return value;
}
