/** What a cache's entries may weigh together (their bytes, say), and how one is weighed. */
export interface LruWeight<V> {
  max: number;
  of: (value: V) => number;
}

/**
 * A bounded map that forgets the least recently used entry first. For per-process caches of
 * immutable data: a miss only costs the lookup it saves, so the bound is all the policy needed.
 * With `weight`, the entries are also bounded by what they weigh together: a count alone let
 * entries of very different sizes (versions binding 200 large skills) take the heap (attack round 6).
 * The newest entry is kept whatever it weighs.
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; weight: number }>();
  private total = 0;

  constructor(
    readonly capacity: number,
    private readonly weight?: LruWeight<V>,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new Error(`LruCache capacity must be a positive integer (got ${capacity})`);
  }

  get size(): number {
    return this.entries.size;
  }

  /** What the entries weigh together (0 without `weight`). */
  get weighed(): number {
    return this.total;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // A Map iterates in insertion order: re-inserting makes this the most recently used.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Adds or replaces `key` (weighed again: a value that grew is set again to be counted). */
  set(key: K, value: V): void {
    this.remove(key);
    const weight = this.weight ? this.weight.of(value) : 0;
    this.entries.set(key, { value, weight });
    this.total += weight;
    while (this.entries.size > this.capacity || (this.weight && this.total > this.weight.max && this.entries.size > 1)) {
      this.remove(this.entries.keys().next().value as K);
    }
  }

  private remove(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.weight;
  }
}
