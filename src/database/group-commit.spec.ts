import { GroupCommit } from './group-commit';

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
