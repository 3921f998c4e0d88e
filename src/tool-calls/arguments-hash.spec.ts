import { createHash } from 'node:crypto';
import { canonicalHash } from './arguments-hash';

describe('canonicalHash', () => {
  it('ignores key order and number spelling, at every depth', () => {
    expect(canonicalHash({ b: 1, a: { d: [1, 2], c: 'x' } })).toBe(canonicalHash({ a: { c: 'x', d: [1, 2] }, b: 1.0 }));
  });

  it('is the SHA-256 of the RFC 8785 form', () => {
    const expected = createHash('sha256').update('{"a":1,"b":"é"}').digest('hex');
    expect(canonicalHash({ b: 'é', a: 1 })).toBe(expected);
  });

  it('tells different arguments apart', () => {
    expect(canonicalHash({ a: [1, 2] })).not.toBe(canonicalHash({ a: [2, 1] }));
    expect(canonicalHash({ a: '1' })).not.toBe(canonicalHash({ a: 1 }));
  });
});
