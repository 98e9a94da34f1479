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

/** A tuple of `N` items of `T`. */
export type Tuple<T, N extends number, R extends T[] = []> = R['length'] extends N ? R : Tuple<T, N, [...R, T]>;

/** The first `n` of `items` as a tuple, to destructure; throws when there are fewer (`why` says why there cannot be). */
export function mustTake<T, N extends number>(items: readonly T[], n: N, why: string): Tuple<T, N> {
  if (items.length < n) throw new Error(`internal error: ${why} (expected ${n} items, got ${items.length})`);
  return items.slice(0, n) as Tuple<T, N>;
}
