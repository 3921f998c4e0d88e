import { driftOf } from './version-builder.service';

describe('driftOf', () => {
  it('is empty when every pinned tool is offered with its pinned digest', () => {
    expect(driftOf({ a: '1', b: '2' }, [{ name: 'b', digest: '2' }, { name: 'a', digest: '1' }])).toEqual([]);
    expect(driftOf({}, [])).toEqual([]);
  });

  it('names changed, removed and unpinned tools, sorted by name', () => {
    expect(
      driftOf({ a: '1', b: '2', c: '3' }, [
        { name: 'd', digest: '4' },
        { name: 'b', digest: '2' },
        { name: 'a', digest: 'x' },
      ]),
    ).toEqual([
      { tool: 'a', reason: 'changed' },
      { tool: 'c', reason: 'removed' },
      { tool: 'd', reason: 'added' },
    ]);
  });

  it('does not mistake inherited object keys for pinned tools', () => {
    expect(driftOf({}, [{ name: 'constructor', digest: '1' }])).toEqual([{ tool: 'constructor', reason: 'added' }]);
  });
});
