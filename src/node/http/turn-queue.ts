/**
 * Runs `run` for each item pushed during this turn of the event loop, all together at its end
 * (setImmediate: after every I/O callback of the turn), in the order they came.
 *
 * Why the edges use it: started as each is parsed, a turn's requests are answered one by one,
 * spread over the turn, and every answer may wake a client or origin that had gone to sleep in
 * between (on a VM, an interrupt each). Started together, their store calls, forwards and
 * answers go out in bursts, which measured up to half the CPU per request (BENCHMARKS.md).
 * `run` must not throw: one item's fault is its own, never the rest of the turn's.
 */
export class TurnQueue<T> {
  readonly #run: (item: T) => void;
  #items: T[] = [];

  constructor(run: (item: T) => void) {
    this.#run = run;
  }

  push(item: T): void {
    if (this.#items.push(item) === 1) setImmediate(this.#drain);
  }

  readonly #drain = (): void => {
    const items = this.#items;
    this.#items = [];
    for (let i = 0; i < items.length; i++) this.#run(items[i]!);
  };
}
