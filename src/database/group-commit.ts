/**
 * Group commit: writes asked for while an earlier one is in flight are gathered and written by
 * ONE statement (one round trip, one commit) as soon as it returns. Alone, a write goes at once
 * (no timer, no added latency); under load the batch is whatever arrived during one round trip.
 * Each caller's promise settles only after the statement that holds its rows returned, so an
 * answer still follows its own rows being durable.
 *
 * A statement is atomic: one bad row would fail every caller's write. When a batch fails, each
 * of its writes is tried again alone, so each caller gets its own answer (and its own error).
 */
export class GroupCommit<T> {
  private readonly queue: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly options: { maxBatch: number; maxInFlight: number },
  ) {}

  submit(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.run(batch).finally(() => {
        this.inFlight--;
        this.flush();
      });
    }
  }

  private async run(batch: { item: T; resolve: () => void; reject: (err: unknown) => void }[]): Promise<void> {
    try {
      await this.write(batch.map((b) => b.item));
      for (const b of batch) b.resolve();
    } catch (err) {
      if (batch.length === 1) return batch[0].reject(err);
      await Promise.all(
        batch.map(async (b) => {
          try {
            await this.write([b.item]);
            b.resolve();
          } catch (alone) {
            b.reject(alone);
          }
        }),
      );
    }
  }
}
