import fc from 'fast-check';
import { canonicalize } from 'json-canonicalize';
import { createHash } from 'node:crypto';
import { callFingerprint } from './call-fingerprint';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('callFingerprint', () => {
  it('is the hash the whole call canonicalized had, which keys stored before are bound to', () => {
    const call = fc.record(
      {
        agentId: fc.string({ unit: 'binary' }),
        tool: fc.string({ unit: 'binary' }),
        arguments: fc.oneof(fc.jsonValue(), fc.constant(undefined)),
        version: fc.oneof(fc.integer({ min: 1 }), fc.constant('latest' as const)),
        runId: fc.oneof(fc.string({ unit: 'binary' }), fc.constant(null)),
      },
      { requiredKeys: ['agentId', 'tool', 'arguments'] },
    );
    fc.assert(
      fc.property(call, (c) => {
        const whole = { agentId: c.agentId, tool: c.tool, arguments: c.arguments ?? null, version: c.version ?? 'latest', runId: c.runId ?? null };
        const found = callFingerprint(c);
        expect(found?.fingerprint).toBe(sha256(canonicalize(whole)));
        expect(found?.argumentsText).toBe(canonicalize(c.arguments ?? null));
      }),
      { numRuns: 2000 },
    );
  });

  it('binds nothing to arguments RFC 8785 cannot write, and lets other failures through', () => {
    expect(callFingerprint({ agentId: 'a', tool: 't', arguments: { n: [1, Infinity] } })).toBeUndefined();
    expect(() => callFingerprint({ agentId: 'a', tool: 't', arguments: { n: BigInt(1) } })).toThrow('BigInt');
  });
});
