/** One tracked item of a HeavyHitters sketch. */
export interface HeavyHitter {
  key: string;
  policy: string;
  /** Counted denials; over-estimates by at most `errorBound` (space-saving). */
  count: number;
  /** What `count` may over-count: the count of the item this one replaced. */
  errorBound: number;
  lastSeenMs: number;
}

interface Slot extends HeavyHitter {
  id: string;
  heapIndex: number;
}

/**
 * The space-saving sketch (Metwally, Agrawal, El Abbadi 2005) in fixed memory: at most
 * `capacity` items are tracked. A new item replaces the least counted one and inherits its
 * count (+1), so an item counted more than total/capacity times is always in the sketch, and
 * a flood of distinct keys (each seen once) churns the bottom without growing anything.
 * The items sit in a min-heap by count: each add is O(log capacity).
 *
 * @example
 * const sketch = new HeavyHitters(100);
 * sketch.add("user-42", "per-user", Date.now());
 * sketch.top(10); // [{ key: "user-42", policy: "per-user", count: 1, … }]
 */
export class HeavyHitters {
  readonly capacity: number;
  private readonly slots = new Map<string, Slot>();
  private readonly heap: Slot[] = [];

  constructor(capacity = 100) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new TypeError(`HeavyHitters capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
  }

  get size(): number {
    return this.heap.length;
  }

  add(key: string, policy: string, nowMs: number): void {
    const id = `${policy}\u0000${key}`;
    const found = this.slots.get(id);
    if (found) {
      found.count++;
      found.lastSeenMs = nowMs;
      this.siftDown(found.heapIndex);
      return;
    }
    if (this.heap.length < this.capacity) {
      const slot: Slot = { id, key, policy, count: 1, errorBound: 0, lastSeenMs: nowMs, heapIndex: this.heap.length };
      this.heap.push(slot);
      this.slots.set(id, slot);
      this.siftUp(slot.heapIndex);
      return;
    }
    // Replace the least counted item (the heap's root), in place.
    const least = this.heap[0]!;
    this.slots.delete(least.id);
    least.errorBound = least.count;
    least.count++;
    least.id = id;
    least.key = key;
    least.policy = policy;
    least.lastSeenMs = nowMs;
    this.slots.set(id, least);
    this.siftDown(0);
  }

  /** The `limit` most counted items, most first (ties: most recent first). */
  top(limit = this.capacity): HeavyHitter[] {
    return [...this.heap]
      .sort((a, b) => b.count - a.count || b.lastSeenMs - a.lastSeenMs)
      .slice(0, limit)
      .map(({ key, policy, count, errorBound, lastSeenMs }) => ({ key, policy, count, errorBound, lastSeenMs }));
  }

  private siftUp(index: number): void {
    const heap = this.heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.count <= heap[index]!.count) return;
      this.swap(index, parent);
      index = parent;
    }
  }

  private siftDown(index: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && heap[left]!.count < heap[smallest]!.count) smallest = left;
      if (right < heap.length && heap[right]!.count < heap[smallest]!.count) smallest = right;
      if (smallest === index) return;
      this.swap(index, smallest);
      index = smallest;
    }
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i]!;
    const b = this.heap[j]!;
    this.heap[i] = b;
    this.heap[j] = a;
    a.heapIndex = j;
    b.heapIndex = i;
  }
}
