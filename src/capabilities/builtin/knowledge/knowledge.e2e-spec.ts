import { randomUUID } from 'node:crypto';
import { CapabilityRegistry } from '../../capability-registry.service';
import type { StampedContribution, ToolContext } from '../../capability.types';
import { knowledgePrompt } from './knowledge.capability';
import { READ_DOCUMENT_MAX_TOKENS, ReadDocumentInput, SEARCH_KNOWLEDGE_MAX_TOKENS, SearchKnowledgeInput } from './knowledge.tools';
import { resultTokens } from '../../kit/tool-output';
import {
  addDocument,
  buildWith,
  callTool,
  configErrors,
  contextFor,
  createAgent,
  createCollection,
  inputErrors,
  resolveResources,
  TestAgent,
  toolContext,
  toolError,
} from '../../../../test/support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from '../../../../test/support/test-app';

const REFUNDS =
  'Customers can ask for a refund within 30 days of delivery. Refunds are paid to the original card within five working days. A refund needs the order number.';

describe('builtin capability: knowledge (e2e)', () => {
  let t: TestApp;
  let registry: CapabilityRegistry;
  let org: TestOrg;
  let other: TestOrg;
  let agent: TestAgent;
  let handbook: string;
  let faq: string;
  let unbound: string;
  let foreign: string;
  const docs: Record<string, string> = {};
  let built: StampedContribution | null;
  let tc: ToolContext;

  beforeAll(async () => {
    t = await createTestApp();
    registry = t.app.get(CapabilityRegistry);
    org = await createOrg(t, ['knowledge:read']);
    other = await createOrg(t, ['knowledge:read']);
    agent = await createAgent(t, org);
    handbook = await createCollection(t, org, 'Handbook', 'How we work:\n  policies and   procedures');
    faq = await createCollection(t, org, 'FAQ');
    unbound = await createCollection(t, org, 'Secrets', 'Not bound to the agent');
    foreign = await createCollection(t, other, 'Their handbook');

    docs.refunds = await addDocument(t, org, handbook, 'Refund policy', REFUNDS);
    docs.shipping = await addDocument(
      t,
      org,
      handbook,
      'Shipping times',
      'Parcels ship within two days. Damaged parcels can be returned; see the refund policy for money back.',
    );
    docs.holidays = await addDocument(t, org, handbook, 'Holidays', 'Staff take 25 days of paid leave a year. Book holidays in the HR portal.');
    docs.password = await addDocument(
      t,
      org,
      faq,
      'Resetting a password',
      'Open the login page and choose "Forgot password". A reset link arrives by e-mail within minutes.',
    );
    docs.empty = await addDocument(t, org, faq, 'Blank page', '');
    docs.secret = await addDocument(t, org, unbound, 'Refund fraud playbook', 'Internal refund refund refund notes that the agent must never see.');
    docs.theirs = await addDocument(t, other, foreign, 'Their refund policy', "Refund refund refund: another organization's text.");

    const resources = await resolveResources(t, org.id, { knowledgeCollections: [handbook, faq] });
    built = await buildWith(registry, 'knowledge', contextFor({ id: org.id, scopes: ['knowledge:read'] }, agent, {}, resources));
    tc = toolContext(org.id, agent.id);
  });
  afterAll(() => t.close());

  const search = (args: unknown, ctx = tc) => callTool(registry, built, 'search_knowledge', args, ctx);
  const read = (args: unknown, ctx = tc) => callTool(registry, built, 'read_document', args, ctx);

  describe('declaration and catalog', () => {
    it('is listed with its tools, scope and config schema, unavailable to an organization without knowledge:read', async () => {
      const res = await t.http
        .get('/api/v1/agents/capabilities?category=knowledge')
        .set(...bearer((await createOrg(t)).keys.viewer))
        .expect(200);
      const knowledge = res.body.items.find((i: { id: string }) => i.id === 'knowledge');
      expect(knowledge).toMatchObject({ scopes: ['knowledge:read'], available: false, sideEffecting: false, risk: 'read_only' });
      expect(knowledge.tools.map((x: Record<string, unknown>) => [x.id, x.risk, x.requiresApproval, x.maxOutputTokens])).toEqual([
        ['search_knowledge', 'read_only', false, SEARCH_KNOWLEDGE_MAX_TOKENS],
        ['read_document', 'read_only', false, READ_DOCUMENT_MAX_TOKENS],
      ]);
      expect(knowledge.configSchema.properties.maxResults).toMatchObject({ type: 'integer', minimum: 1, maximum: 20, default: 5 });
      expect(knowledge.tools[0].inputSchema).toMatchObject({ required: ['query'], additionalProperties: false });
      expect(knowledge.tools[1].inputSchema.properties).toMatchObject({ documentId: { format: 'uuid' }, offset: { default: 0 }, maxChars: { default: 6000 } });
      const mine = await t.http
        .get('/api/v1/agents/capabilities?category=knowledge')
        .set(...bearer(org.keys.viewer))
        .expect(200);
      expect(mine.body.items.find((i: { id: string }) => i.id === 'knowledge').available).toBe(true);
    });

    it('describes each tool by when to use it, the same text in the catalog and the declaration', () => {
      expect(registry.get('knowledge')!.tools.map((x) => x.declaration.input)).toEqual([SearchKnowledgeInput, ReadDocumentInput]);
      const tools = registry.get('knowledge')!.tools.map((x) => x.declaration.description);
      expect(tools[0]).toMatch(/^Use this before answering/);
      expect(tools[1]).toMatch(/^Use this when a snippet/);
      expect(
        registry
          .catalog()
          .find((d) => d.id === 'knowledge')!
          .tools.map((x) => x.description),
      ).toEqual(tools);
    });
  });

  describe('config', () => {
    it('defaults maxResults to 5 and refuses what is not an integer from 1 to 20', () => {
      expect(registry.validateConfig('knowledge', {})).toEqual({ value: { maxResults: 5 }, errors: [] });
      expect(registry.validateConfig('knowledge', { maxResults: 20 }).errors).toEqual([]);
      for (const maxResults of [0, 21, 2.5, '5', null]) expect(configErrors(registry, 'knowledge', { maxResults })).toEqual(['maxResults']);
      expect(configErrors(registry, 'knowledge', { max: 3 })).toEqual(['max']);
    });
  });

  describe('build', () => {
    it('contributes nothing when no collection is bound', async () => {
      expect(await buildWith(registry, 'knowledge', contextFor(org, agent, {}))).toBeNull();
    });

    it('offers both tools and names the bound collections, what they hold and how many documents, in the prompt', () => {
      expect(built!.tools.map((x) => x.id)).toEqual(['search_knowledge', 'read_document']);
      // Made only when read: a tool call never reads it (attack round 16, T-F4).
      expect(typeof built!.prompt).toBe('function');
      const prompt = (built!.prompt as () => string)();
      expect(prompt).toContain('- **Handbook** (3 documents): How we work: policies and procedures\n- **FAQ** (2 documents)\n');
      expect(prompt).not.toContain('Secrets');
      expect(knowledgePrompt([{ id: randomUUID(), name: 'New', description: null, documentCount: 0 }])).toContain('- **New** (empty for now)\n');
      expect(knowledgePrompt([{ id: randomUUID(), name: 'One', description: '  ', documentCount: 1 }])).toContain('- **One** (1 document)\n');
    });
  });

  describe('search_knowledge', () => {
    it('ranks the obviously relevant document first, with a highlighted snippet and its collection', async () => {
      const res = await search({ query: 'refund' });
      expect(res.results.map((r: { title: string }) => r.title)).toEqual(['Refund policy', 'Shipping times']);
      expect(res.results[0]).toEqual({
        documentId: docs.refunds,
        title: 'Refund policy',
        collection: 'Handbook',
        snippet: expect.stringContaining('**refund**'),
        score: expect.any(Number),
      });
      expect(res.results[0].score).toBeGreaterThan(res.results[1].score);
      expect(res).not.toHaveProperty('message');

      const password = await search({ query: 'forgot my password' });
      expect(password.results[0]).toMatchObject({ documentId: docs.password, collection: 'FAQ' });
      const phrase = await search({ query: '"paid leave" -refund' });
      expect(phrase.results.map((r: { documentId: string }) => r.documentId)).toEqual([docs.holidays]);
    });

    it('returns at most limit results, capped by the configured maxResults', async () => {
      expect((await search({ query: 'refund', limit: 1 })).results).toHaveLength(1);
      const resources = await resolveResources(t, org.id, { knowledgeCollections: [handbook] });
      const capped = await buildWith(registry, 'knowledge', contextFor(org, agent, { maxResults: 1 }, resources));
      expect((await callTool(registry, capped, 'search_knowledge', { query: 'refund', limit: 20 }, tc)).results).toHaveLength(1);
    });

    it('falls back to documents with some of the words when none has them all, and says so', async () => {
      const res = await search({ query: 'can I return a damaged kettle' });
      expect(res.results.map((r: { title: string }) => r.title)).toEqual(['Shipping times']);
      expect(res.message).toBe('No document contains all the words of the query; these contain some of them, best first.');
    });

    it('says so when nothing matches, and when the query has no searchable words', async () => {
      const none = await search({ query: 'submarine' });
      expect(none).toEqual({ query: 'submarine', results: [], message: expect.stringContaining('Nothing in "Handbook", "FAQ" matches "submarine"') });
      expect((await search({ query: 'yellow submarine' })).message).toContain('Nothing in "Handbook", "FAQ" matches "yellow submarine"');
      const stop = await search({ query: 'the and of' });
      expect(stop).toEqual({ query: 'the and of', results: [], message: expect.stringContaining('no words that can be searched for') });
    });

    it('reads a run of negations by its parity: more than PostgreSQL stacks failed the search (attack round 12, J-F3)', async () => {
      const twice = await search({ query: `${'-'.repeat(40)}refund` });
      expect(twice.query).toBe(`${'-'.repeat(40)}refund`);
      expect(twice.results.map((r: { title: string }) => r.title)).toContain('Refund policy');
      // An odd run excludes: no document has refund without policy, so the words are searched apart.
      const once = await search({ query: `refund ${'- '.repeat(41)}policy` });
      expect(once.message).toBe('No document contains all the words of the query; these contain some of them, best first.');
      expect(await search({ query: '-'.repeat(500) })).toEqual(
        expect.objectContaining({ results: [], message: expect.stringContaining('no words that can be searched for') }),
      );
    });

    it("never finds documents outside the bound collections, nor another organization's", async () => {
      expect((await search({ query: 'fraud playbook' })).results).toEqual([]);
      for (const query of ['refund', 'refund fraud playbook organization']) {
        const found = (await search({ query, limit: 20 })).results.map((r: { documentId: string }) => r.documentId);
        expect(found).toEqual([docs.refunds, docs.shipping]);
      }
      // A tool built for this organization but called in another's context finds nothing of either.
      expect((await search({ query: 'refund' }, toolContext(other.id, agent.id))).results).toEqual([]);
    });

    it('leaves whole results out, and says how many, rather than overflowing its output budget', async () => {
      const big = await createCollection(t, org, 'Catalogue');
      const title = (i: number) => `Widget ${i}: ` + 'sturdy adjustable aluminium mounting bracket with stainless fasteners '.repeat(6);
      for (let i = 0; i < 20; i++) await addDocument(t, org, big, title(i).slice(0, 500), 'Every widget bracket ships flat. '.repeat(20));
      const resources = await resolveResources(t, org.id, { knowledgeCollections: [big] });
      const wide = await buildWith(registry, 'knowledge', contextFor(org, agent, { maxResults: 20 }, resources));
      const res = await callTool(registry, wide, 'search_knowledge', { query: 'widget bracket', limit: 20 }, tc);
      expect(res.omitted).toBeGreaterThan(0);
      expect(res.results.length + res.omitted).toBe(20);
      expect(res.message).toBe(`Left out to keep this result short: ${res.omitted} more matching documents. Search with more specific words to see them.`);
      expect(resultTokens(res)).toBeLessThanOrEqual(SEARCH_KNOWLEDGE_MAX_TOKENS);
    });

    it('refuses arguments its schema refuses', () => {
      expect(inputErrors(registry, 'knowledge', 'search_knowledge', {})).toEqual(['query']);
      expect(inputErrors(registry, 'knowledge', 'search_knowledge', { query: '', limit: 0 })).toEqual(['limit', 'query']);
      expect(inputErrors(registry, 'knowledge', 'search_knowledge', { query: 'x', limit: 21, sql: 'drop' })).toEqual(['limit', 'sql']);
    });
  });

  describe('read_document', () => {
    it('reads a whole short document', async () => {
      const res = await read({ documentId: docs.refunds });
      expect(res).toEqual({
        documentId: docs.refunds,
        title: 'Refund policy',
        collection: 'Handbook',
        offset: 0,
        content: REFUNDS,
        totalChars: REFUNDS.length,
        nextOffset: null,
      });
      expect(await read({ documentId: docs.empty })).toMatchObject({ content: '', totalChars: 0, nextOffset: null });
    });

    it('pages by offset and maxChars, in characters, until nextOffset is null', async () => {
      const text = Array.from({ length: 300 }, (_, i) => `Line ${i} of the long manual, with an emoji 🚚 in it.`).join('\n');
      const id = await addDocument(t, org, handbook, 'Long manual', text);
      const chars = Array.from(text);
      let offset: number | null = 0;
      const pages: string[] = [];
      while (offset !== null) {
        const page: { content: string; nextOffset: number | null; totalChars: number; offset: number } = await read({ documentId: id, offset, maxChars: 5000 });
        expect(page.totalChars).toBe(chars.length);
        expect(page.offset).toBe(offset);
        expect(Array.from(page.content).length).toBeLessThanOrEqual(5000);
        pages.push(page.content);
        offset = page.nextOffset;
      }
      expect(pages.length).toBeGreaterThan(2);
      expect(pages.join('')).toBe(text);
    });

    it('makes a page shorter when its text would overflow the output budget, so nextOffset is never lost', async () => {
      // About one token per character: 12000 characters would be three times the budget.
      const text = '知识库中的文件内容。'.repeat(1500);
      const id = await addDocument(t, org, faq, 'Dense', text);
      const first = await read({ documentId: id, maxChars: 12000 });
      expect(resultTokens(first)).toBeLessThanOrEqual(READ_DOCUMENT_MAX_TOKENS);
      expect(first.content.length).toBeLessThan(12000);
      expect(first.nextOffset).toBe(first.content.length);
      const second = await read({ documentId: id, offset: first.nextOffset, maxChars: 12000 });
      expect(text.startsWith(first.content + second.content)).toBe(true);
    });

    it('refuses an offset past the end', async () => {
      const err = await toolError(read({ documentId: docs.refunds, offset: REFUNDS.length }));
      expect(err).toEqual({ code: 'offset_out_of_range', message: expect.stringContaining(`The document has ${REFUNDS.length} characters`) });
    });

    it('finds no document outside the bound collections, of another organization, or that does not exist', async () => {
      for (const documentId of [docs.secret, docs.theirs, randomUUID()]) {
        const err = await toolError(read({ documentId }));
        expect(err).toEqual({ code: 'document_not_found', message: expect.stringContaining(`No document ${documentId} is in the knowledge available to you`) });
      }
      expect((await toolError(read({ documentId: docs.refunds }, toolContext(other.id, agent.id)))).code).toBe('document_not_found');
    });

    it('refuses arguments its schema refuses', () => {
      expect(inputErrors(registry, 'knowledge', 'read_document', { documentId: 'doc-1' })).toEqual(['documentId']);
      expect(inputErrors(registry, 'knowledge', 'read_document', { documentId: randomUUID(), offset: -1, maxChars: 100 })).toEqual(['maxChars', 'offset']);
      expect(registry.validateToolInput('knowledge', 'read_document', { documentId: docs.refunds }).plain).toEqual({
        documentId: docs.refunds,
        offset: 0,
        maxChars: 6000,
      });
    });
  });
});
