import { redactSecretsDeep } from './redact-secrets';
import { findSecrets, secretPattern } from './secret-search';
import { spellingsOf } from './secret-spellings';

const MiB = 1024 * 1024;

describe('findSecrets', () => {
  const pattern = (...values: string[]) => secretPattern(values.map(spellingsOf))!;

  it('every place, overlapping ones joined, in order', () => {
    const p = pattern('Bearer abcdefgh-1234', 'gh-1234-zz');
    expect(findSecrets('x abcdefgh-1234-zz y ABCDEFGH-1234 z', p)).toEqual([
      [2, 18],
      [21, 34],
    ]);
    expect(findSecrets('nothing here', p)).toEqual([]);
    expect(findSecrets('', p)).toEqual([]);
  });

  it('shares anchors between the spellings of one secret: a Bearer header needs 5 searches, not one per spelling', () => {
    const p = pattern('Bearer supersecret-mcp-credential-XYZ123');
    const spellings = [...p.byAnchor.values()].flat().length;
    expect(spellings).toBeGreaterThanOrEqual(11);
    expect(p.byAnchor.size).toBe(5);
    expect(p.anchors.map((r) => r.source.split('|').length)).toEqual([2, 3]);
  });

  // A credential and a result chosen together by one org admin (the server is theirs): indexOf took
  // 51 s for the first credential on 16 MiB of `a`, the work growing with the credential's length.
  const twenty = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`h${i}`, 'a'.repeat(8000 - i) + 'b' + i]));
  it.each([
    ['a run broken in its middle', { authorization: 'a'.repeat(4000) + 'b' + 'a'.repeat(4000) }, 'a'.repeat(4 * MiB)],
    ['a run that ends in another letter', { authorization: 'Bearer ' + 'a'.repeat(8000) + 'b' }, ('a'.repeat(7999) + 'c').repeat(512)],
    ['twenty such credentials', twenty, 'a'.repeat(4 * MiB)],
  ])('in time linear in the text, whatever the credential: %s', (_what, credentials, text) => {
    // Kept whole: the search stayed within its linear budget (past it, the text is replaced whole).
    // Its time is measured by bench/redact-secrets.ts, not here.
    expect(redactSecretsDeep({ text }, credentials)).toEqual({ text });
  });

  it('a text that would take more than linear work to search is redacted whole', () => {
    // Every piece of this credential repeats, so no anchor pins it: each `a` starts a long comparison.
    const text = ('a'.repeat(7999) + 'c').repeat(512);
    const out = redactSecretsDeep(
      {
        content: [
          { type: 'text', text },
          { type: 'text', text: 'kept' },
        ],
      },
      { k: 'a'.repeat(8192) },
    );
    expect(out).toEqual({
      content: [
        { type: 'text', text: '[redacted]' },
        { type: 'text', text: '[redacted]' },
      ],
    });
  });

  it('a secret repeated through the whole text is found throughout', () => {
    const p = pattern('abcabcabc');
    expect(findSecrets('x' + 'abc'.repeat(1000) + 'x', p)).toEqual([[1, 3001]]);
  });
});
