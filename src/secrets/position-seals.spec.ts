import { PositionSeal, PositionSeals } from './position-seals';

describe('PositionSeal', () => {
  const secret = Buffer.alloc(32, 9);
  const seal = new PositionSeal(secret, 'events\u0000org-a');

  it('seals two unsigned 64-bit numbers into 32 base64url characters and opens them again', () => {
    for (const [a, b] of [
      [0n, 0n],
      [1n, 0n],
      [4_294_967_296n, 123n],
      [0xffff_ffff_ffff_ffffn, 0xffff_ffff_ffff_ffffn],
    ]) {
      const token = seal.seal(a, b);
      expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
      expect(seal.open(token)).toEqual([a, b]);
    }
    expect(() => seal.seal(-1n, 0n)).toThrow(RangeError);
    expect(() => seal.seal(0n, 1n << 64n)).toThrow(RangeError);
  });

  it('gives neighbouring positions tokens that share nothing a client could count with', () => {
    const tokens = [100n, 101n, 102n, 10_100n].map((n) => seal.seal(n, 0n));
    expect(new Set(tokens).size).toBe(4);
    // No common prefix past what chance gives: the block is enciphered whole.
    const prefix = (x: string, y: string) => [...x].findIndex((c, i) => c !== y[i]);
    expect(Math.max(prefix(tokens[0], tokens[1]), prefix(tokens[1], tokens[2]))).toBeLessThan(4);
    // Deterministic: the same position is the same id, in every stream that sends it.
    expect(seal.seal(100n, 0n)).toBe(tokens[0]);
  });

  it("opens no other context's token, and no edited one", () => {
    const token = seal.seal(42n, 7n);
    expect(new PositionSeal(secret, 'events\u0000org-b').open(token)).toBeUndefined();
    expect(new PositionSeal(Buffer.alloc(32, 8), 'events\u0000org-a').open(token)).toBeUndefined();
    for (let i = 0; i < token.length; i++) {
      const edited = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      expect(seal.open(edited)).toBeUndefined();
    }
    for (const bad of ['', '42-7', token + 'A', token.slice(1), token.replace(/./, '+'), `${token.slice(0, 31)}=`]) {
      expect(seal.open(bad)).toBeUndefined();
    }
  });
});

describe('PositionSeals', () => {
  const withKey = (key: Buffer) => {
    const seals = new PositionSeals({ read: () => Promise.resolve(key) } as never);
    return seals.onModuleInit().then(() => seals);
  };

  it('keys every organization, run and list apart, under the deployment secret', async () => {
    const seals = await withKey(Buffer.alloc(32, 1));
    const token = seals.events('org-a').seal(5n, 6n);
    expect((await withKey(Buffer.alloc(32, 1))).events('org-a').open(token)).toEqual([5n, 6n]);
    expect(seals.events('org-b').open(token)).toBeUndefined();
    expect(seals.audit('org-a').open(token)).toBeUndefined();
    expect(seals.run('org-a', 'run-1').open(token)).toBeUndefined();
    expect(seals.run('org-a', 'run-2').open(seals.run('org-a', 'run-1').seal(5n, 0n))).toBeUndefined();
    expect((await withKey(Buffer.alloc(32, 2))).events('org-a').open(token)).toBeUndefined();
  });

  it('refuses to start without its key', async () => {
    const seals = new PositionSeals({ read: () => Promise.resolve(undefined) } as never);
    await expect(seals.onModuleInit()).rejects.toThrow(/migrations/);
    expect(() => seals.events('org')).toThrow(/initialized/);
  });
});
