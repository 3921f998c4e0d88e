import { createHash } from 'node:crypto';
import { canonicalHash, contentHash, ownEntry, toolDigest } from './digests';

describe('digests', () => {
  const tool = {
    name: 'search',
    description: 'Search.',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    risk: 'read_only' as const,
    requiresApproval: false,
  };

  it('hashes the RFC 8785 canonical form, so key order does not matter', () => {
    expect(canonicalHash({ b: 1, a: [1, 'x'] })).toBe(createHash('sha256').update('{"a":[1,"x"],"b":1}').digest('hex'));
    expect(canonicalHash({ a: [1, 'x'], b: 1 })).toBe(canonicalHash({ b: 1, a: [1, 'x'] }));
  });

  it('changes a tool digest with each pinned fact, and only with them', () => {
    const base = toolDigest(tool);
    expect(toolDigest({ ...tool, inputSchema: { required: ['q'], properties: { q: { type: 'string' } }, type: 'object' } })).toBe(base);
    for (const changed of [
      { ...tool, name: 'find' },
      { ...tool, description: 'Search!' },
      { ...tool, inputSchema: { type: 'object' } },
      { ...tool, risk: 'mutating' as const },
      { ...tool, requiresApproval: true },
    ]) {
      expect(toolDigest(changed)).not.toBe(base);
    }
    expect(toolDigest({ ...tool, extra: 'ignored' } as typeof tool)).toBe(base);
  });

  it('keys a version by its spec and every tool digest', () => {
    expect(contentHash('s', { a: '1', b: '2' })).toBe(contentHash('s', { b: '2', a: '1' }));
    expect(contentHash('s', { a: '1' })).not.toBe(contentHash('s', { a: '2' }));
    expect(contentHash('s', {})).not.toBe(contentHash('t', {}));
  });
});

describe('ownEntry', () => {
  it('finds own entries only', () => {
    expect(ownEntry({ a: 1 }, 'a')).toBe(1);
    expect(ownEntry({ a: 1 }, 'constructor')).toBeUndefined();
    expect(ownEntry(undefined, 'a')).toBeUndefined();
  });
});
