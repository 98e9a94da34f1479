/**
 * A least-recently-used cache bounded by entry count and by total weight (for strings, their
 * length), so a few huge values cannot pin the memory that thousands of small ones would use.
 * A value heavier than the whole weight budget is not cached at all.
 */
export class LruCache<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private totalWeight = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number,
    private readonly weigh: (value: V) => number,
  ) {}

  /** The value under `key`, now marked most recently used; undefined when absent. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Whether `key` is cached, without changing its place in the order. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Stores `value` as the most recently used entry and evicts the oldest ones over budget. */
  set(key: string, value: V): void {
    this.delete(key);
    const weight = this.weigh(value);
    if (weight > this.maxWeight || this.maxEntries <= 0) return;
    this.entries.set(key, { value, weight });
    this.totalWeight += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.totalWeight <= this.maxWeight) break;
      this.entries.delete(oldest);
      this.totalWeight -= entry.weight;
    }
  }

  /** Removes `key` if present. */
  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.totalWeight -= entry.weight;
  }

  /** Number of cached entries. */
  get size(): number {
    return this.entries.size;
  }
}
