/**
 * The lowest free address of one pool and family, found without scanning from the pool's first
 * address. Folder-internal: the allocator keeps one per pool and family.
 *
 * A cursor walks the pool's usable spans upward and never goes back: every usable address below
 * it is held, except those released since, which wait in a min-heap. The lowest free address is
 * the heap's lowest entry that is still free, else the cursor once it has stepped over the held
 * addresses in front of it. The cursor passes each address at most once and each release is one
 * heap push, so an allocation costs amortised O(log n) (n = held addresses), where the plain scan
 * cost O(n): O(n²) over a burst of Services.
 *
 * @module
 */
import type { Span } from "./pools.ts";

/** A binary min-heap of bigints. */
class MinHeap {
  readonly #items: bigint[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): bigint | undefined {
    return this.#items[0];
  }

  push(value: bigint): void {
    const items = this.#items;
    items.push(value);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]! <= value) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = value;
  }

  pop(): bigint | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]! < items[left]! ? right : left;
      if (items[child]! >= last) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
    return top;
  }
}

/** The lowest-free-address search of one pool and family. */
export class FreeSearch {
  readonly #spans: readonly Span[];
  /** Index of the span the cursor is in. */
  #span = 0;
  /** Every usable address below it is held or waits in #released; undefined = past the end. */
  #cursor: bigint | undefined;
  /** Addresses below the cursor released since it passed them (some may be held again). */
  readonly #released = new MinHeap();
  readonly #queued = new Set<bigint>();

  /**
   * @param spans the pool's usable spans of one family, sorted and merged
   */
  constructor(spans: readonly Span[]) {
    this.#spans = spans;
    this.#cursor = spans[0]?.first;
  }

  /**
   * The lowest usable address that `held` says is free. Takes nothing: the caller records the
   * address as held if it uses it.
   * @param held whether an address is held by any Service
   * @returns the address, or undefined when every usable address is held
   */
  lowestFree(held: (value: bigint) => boolean): bigint | undefined {
    for (let value = this.#released.peek(); value !== undefined; value = this.#released.peek()) {
      if (!held(value)) return value;
      this.#released.pop();
      this.#queued.delete(value);
    }
    while (this.#cursor !== undefined && held(this.#cursor)) this.#advance();
    return this.#cursor;
  }

  /**
   * Tells the search that a usable address of this pool and family is no longer held.
   * @param value the address
   */
  released(value: bigint): void {
    if (this.#cursor !== undefined && value >= this.#cursor) return; // still ahead of the cursor
    if (this.#queued.has(value)) return;
    this.#queued.add(value);
    this.#released.push(value);
  }

  #advance(): void {
    const span = this.#spans[this.#span]!;
    if (this.#cursor! < span.last) {
      this.#cursor = this.#cursor! + 1n;
      return;
    }
    this.#span++;
    this.#cursor = this.#spans[this.#span]?.first;
  }
}
