import * as tokenizer from 'gpt-tokenizer';
import type { KnowledgeRepository } from '../../../knowledge/knowledge.repository';
import type { ToolContext } from '../../capability.types';
import { fitsIn, largestFitting, resultTokens } from '../../kit/tool-output';
import { READ_DOCUMENT_MAX_TOKENS, ReadDocumentInput, ReadDocumentResult, KnowledgeTools } from './knowledge.tools';

/**
 * Attack round 21, AC-F2: `read_document` made its page fit the output budget by a binary search
 * over the page's length, counting the whole page at each step up to the budget: about fourteen
 * counts, the tokenizer handed 54,000 to 120,000 characters for a page of 12,000 (8.9 ms of the
 * event loop for control characters, 3.3 to 5.9 ms for emoji, CJK, words then emoji), for every
 * call of any agent key. The text is now counted once, then the page it gives once or a few times
 * more: 13,000 to 24,000 characters, 2.3 to 3.1 ms. Here, what the tokenizer is handed is weighed
 * against the page answered.
 */
describe('read_document fitting its page (attack round 21 AC-F2)', () => {
  const pick = (alphabet: string, n: number, seed: number) => {
    const chars = Array.from(alphabet);
    return Array.from({ length: n }, (_, i) => chars[(i * 7919 + seed * 104_729) % chars.length]).join('');
  };
  const texts: Record<string, string> = {
    emoji: pick('😀😁😂🤣😃😄😅😆🚚🙂', 12_000, 1),
    cjk: pick('的一是不了人我在有他这为之大来以个中上们到说', 12_000, 2),
    controls: pick('\u0001\u0002\u0003\u0004"\\', 12_000, 3),
    // Cheap at first, dear after: an estimate from the start would overshoot.
    'words, then emoji': `${'plain words here '.repeat(200)}${pick('😀😁😂🤣😃😄😅😆', 9_000, 4)}`,
    'one letter': 'a'.repeat(12_000),
  };

  const read = async (content: string, input: Partial<ReadDocumentInput> = {}, title = 'A long document'): Promise<ReadDocumentResult> => {
    const chars = Array.from(content);
    const repository = {
      readDocumentPage: async (_org: string, _collections: readonly string[], _id: string, offset: number, maxChars: number) => ({
        title,
        collection: 'Handbook',
        total_chars: chars.length + offset,
        page: chars.slice(0, maxChars).join(''),
      }),
    } as unknown as KnowledgeRepository;
    const ctx = { orgId: 'org', agentId: 'agent', signal: new AbortController().signal } as ToolContext;
    const args = Object.assign(new ReadDocumentInput(), { documentId: '6f1c0a52-9d4e-4a55-8d1e-2f0a4e1b7c33', maxChars: 12_000, ...input });
    return new KnowledgeTools(repository).read(ctx, [{ id: 'c', name: 'Handbook', description: null, documentCount: 1 }], args);
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`answers a page that fits, nearly the longest, having counted little more than three pages: ${name}`, async () => {
      const spy = jest.spyOn(tokenizer, 'countTokens');
      let page: ReadDocumentResult;
      let handed: number;
      try {
        page = await read(text);
        handed = spy.mock.calls.reduce((n, c) => n + (c[0] as string).length, 0);
      } finally {
        spy.mockRestore();
      }
      expect(fitsIn(page, READ_DOCUMENT_MAX_TOKENS)).toBe(true);
      expect(text.startsWith(page.content)).toBe(true);
      const n = Array.from(page.content).length;
      expect(page.nextOffset).toBe(n < Array.from(text).length ? n : null);
      const chars = Array.from(text);
      const make = (k: number) => ({ ...page, content: chars.slice(0, k).join('') });
      const longest = largestFitting(chars.length, (k) => fitsIn(make(k), READ_DOCUMENT_MAX_TOKENS));
      expect(n).toBeGreaterThanOrEqual(Math.floor(longest * 0.7));
      // A binary search handed the tokenizer 10 to 15 pages' worth.
      expect(handed).toBeLessThanOrEqual(4 * JSON.stringify(page).length + 4 * READ_DOCUMENT_MAX_TOKENS);
    });
  }

  it('still answers some text beside the longest title of escapes', async () => {
    const page = await read(texts.controls, {}, '\u0001'.repeat(500));
    expect(fitsIn(page, READ_DOCUMENT_MAX_TOKENS)).toBe(true);
    expect(page.content.length).toBeGreaterThan(100);
    expect(page.nextOffset).toBe(Array.from(page.content).length);
  });

  it('answers a page whole when it fits, counted once', async () => {
    const text = 'Short manual. '.repeat(50);
    const page = await read(text);
    expect(page).toMatchObject({ content: text, nextOffset: null });
    expect(resultTokens(page)).toBeLessThanOrEqual(READ_DOCUMENT_MAX_TOKENS);
  });
});
