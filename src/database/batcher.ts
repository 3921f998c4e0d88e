interface Waiting<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * One statement for what concurrent requests ask of the database at about the same time. Items
 * submitted while `maxInFlight` statements are out are gathered and sent together as soon as one
 * returns; alone, an item goes at once (no timer, no added latency), so under load a batch is
 * whatever arrived during one round trip. Every statement costs a socket write, a wake-up of the
 * database process and a plan, and on this product's hot path those are most of the cost
 * (docs/benchmarks.md), so fewer statements is the lever, not faster ones.
 *
 * An item never joins a statement already sent: what it reads or writes happens after it was
 * submitted. That is what keeps a revoked key refused on the next request, batched or not.
 *
 * A statement is atomic: one bad item would fail every caller. When a batch fails, each of its
 * items is tried again alone, so each caller gets its own answer (and its own error).
 */
export class Batcher<T, R> {
  private readonly queue: Waiting<T, R>[] = [];
  private inFlight = 0;

  /** `run` answers one result per item, in the items' order. */
  constructor(
    private readonly run: (items: T[]) => Promise<readonly R[]>,
    private readonly options: { maxBatch: number; maxInFlight: number },
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  private async send(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.runChecked(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(results[i]));
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      await Promise.all(
        batch.map(async (b) => {
          try {
            b.resolve((await this.runChecked([b.item]))[0]);
          } catch (alone) {
            b.reject(alone);
          }
        }),
      );
    }
  }

  private async runChecked(items: T[]): Promise<readonly R[]> {
    const results = await this.run(items);
    if (results.length !== items.length) throw new Error(`a batch of ${items.length} answered ${results.length} results`);
    return results;
  }
}

/**
 * Group commit: writes asked for while an earlier one is in flight are written by ONE statement
 * (one round trip, one commit). Each caller's promise settles only after the statement that holds
 * its rows returned, so an answer still follows its own rows being durable.
 */
export class GroupCommit<T> extends Batcher<T, void> {
  constructor(write: (items: T[]) => Promise<void>, options: { maxBatch: number; maxInFlight: number }) {
    super(async (items) => {
      await write(items);
      return items.map(() => undefined);
    }, options);
  }
}
