import { OrgGate } from './org-gate';

/** A work that runs until released, recording that it started. */
function held(started: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  return { work: () => (started.push(name), done.then(() => name)), release: () => release() };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('OrgGate', () => {
  it('runs at most `concurrency` works of one organization at once, the rest in order of arrival; other organizations do not wait', async () => {
    const gate = new OrgGate(2);
    const started: string[] = [];
    const works = ['a1', 'a2', 'a3', 'a4'].map((n) => held(started, n));
    const results = works.map((w) => gate.run('a', w.work));
    const other = held(started, 'b1');
    const b = gate.run('b', other.work);
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect(gate.load('a')).toEqual({ running: 2, waiting: 2 });
    works[1].release();
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    works[0].release();
    works[2].release();
    await turn();
    await turn();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    works[3].release();
    other.release();
    expect(await Promise.all([...results, b])).toEqual(['a1', 'a2', 'a3', 'a4', 'b1']);
    expect(gate.load('a')).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses past `maxWaiting` with its error, and passes the turn on when a work fails', async () => {
    const gate = new OrgGate(1, 1, (waiting) => new Error(`${waiting} waiting`));
    const started: string[] = [];
    const first = held(started, 'first');
    const running = gate.run('a', first.work);
    const second = gate.run('a', () => Promise.reject(new Error('broken')));
    await expect(gate.run('a', async () => 'third')).rejects.toThrow('1 waiting');
    first.release();
    await running;
    await expect(second).rejects.toThrow('broken');
    expect(await gate.run('a', async () => 'after')).toBe('after');
    expect(gate.load('a')).toEqual({ running: 0, waiting: 0 });
  });

  it('a wait ended by its signal rejects with its reason and never runs its work; the others keep their order', async () => {
    const gate = new OrgGate(1);
    const started: string[] = [];
    const first = held(started, 'first');
    const running = gate.run('a', first.work);
    const controller = new AbortController();
    const gone = gate.run('a', async () => (started.push('gone'), 'gone'), controller.signal);
    const last = gate.run('a', async () => (started.push('last'), 'last'));
    controller.abort(new Error('timed out'));
    await expect(gone).rejects.toThrow('timed out');
    expect(gate.load('a')).toEqual({ running: 1, waiting: 1 });
    first.release();
    expect(await Promise.all([running, last])).toEqual(['first', 'last']);
    expect(started).toEqual(['first', 'last']);
    await expect(gate.run('a', async () => 'never', AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
    expect(gate.load('a')).toEqual({ running: 0, waiting: 0 });
  });
});
