import { Batcher, GroupCommit } from './batcher';

describe('GroupCommit', () => {
  it('writes alone at once, and gathers what arrives during a write into the next one', async () => {
    const statements: number[][] = [];
    let release: () => void = () => undefined;
    const group = new GroupCommit<number>(
      (items) => {
        statements.push(items);
        return statements.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
      { maxBatch: 3, maxInFlight: 1 },
    );
    const first = group.submit(1);
    expect(statements).toEqual([[1]]);
    const rest = [2, 3, 4, 5].map((n) => group.submit(n));
    expect(statements).toEqual([[1]]);
    release();
    await Promise.all([first, ...rest]);
    expect(statements).toEqual([[1], [2, 3, 4], [5]]);
  });

  it('answers each caller only after the statement holding its item returned', async () => {
    let release: () => void = () => undefined;
    const group = new GroupCommit<number>(() => new Promise<void>((r) => (release = r)), { maxBatch: 10, maxInFlight: 1 });
    let done = false;
    const pending = group.submit(1).then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    release();
    await pending;
    expect(done).toBe(true);
  });

  it('when a batch fails, writes each item alone so that only the bad one fails', async () => {
    const statements: number[][] = [];
    let release: () => void = () => undefined;
    const group = new GroupCommit<number>(
      (items) => {
        statements.push(items);
        if (statements.length === 1) return new Promise<void>((r) => (release = r));
        return items.includes(3) ? Promise.reject(new Error(`bad ${items.join()}`)) : Promise.resolve();
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = group.submit(1);
    const results = [2, 3, 4].map((n) =>
      group.submit(n).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    release();
    await first;
    expect(await Promise.all(results)).toEqual(['ok', 'bad 3', 'ok']);
    expect(statements).toEqual([[1], [2, 3, 4], [2], [3], [4]]);
  });
});

describe('Batcher (reads)', () => {
  it("answers each caller its own item's result, and never joins a statement already sent", async () => {
    const statements: string[][] = [];
    const released: (() => void)[] = [];
    const reads = new Batcher<string, string | null>(
      async (keys) => {
        statements.push(keys);
        await new Promise<void>((r) => released.push(r));
        return keys.map((k) => (k.startsWith('known') ? k.toUpperCase() : null));
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = reads.submit('known-1');
    // Arrived while the first statement is out: they wait for the next one, whatever it would read.
    const later = ['known-2', 'missing', 'known-3'].map((k) => reads.submit(k));
    expect(statements).toEqual([['known-1']]);
    released.shift()!();
    expect(await first).toBe('KNOWN-1');
    await new Promise((r) => setImmediate(r));
    expect(statements).toEqual([['known-1'], ['known-2', 'missing', 'known-3']]);
    released.shift()!();
    expect(await Promise.all(later)).toEqual(['KNOWN-2', null, 'KNOWN-3']);
  });

  it('sends up to maxInFlight statements at once, and refuses a statement that answers the wrong number of results', async () => {
    const statements: number[][] = [];
    const reads = new Batcher<number, number>(
      async (ns) => {
        statements.push(ns);
        await new Promise((r) => setImmediate(r));
        return ns.length === 2 ? [ns[0]] : ns.map((n) => n * 10);
      },
      { maxBatch: 5, maxInFlight: 2 },
    );
    const answers = await Promise.allSettled([1, 2, 3, 4].map((n) => reads.submit(n)));
    expect(statements[0]).toEqual([1]);
    expect(statements[1]).toEqual([2]);
    expect(statements[2]).toEqual([3, 4]);
    // The short answer failed the batch; each item was then read alone and answered.
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : 'refused'))).toEqual([10, 20, 30, 40]);
  });
});
