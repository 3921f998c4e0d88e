import { randomUUID } from 'node:crypto';
import { addDocument, createCollection, createSkill } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const SCOPES = ['knowledge:read', 'memory:read', 'memory:write'];

/**
 * Issue 6, "Done when": one agent that binds a knowledge collection and a skill and attaches all
 * seven builtin capabilities, published, read back as a manifest, and every one of its tools
 * called through POST /agents/{id}/tool-calls (the memory-write ones through approval).
 */
describe('the builtin capabilities on one published agent (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;
  let collection: string;
  let hidden: string;
  const docs: Record<string, string> = {};

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);
  const call = (tool: string, args: object, extra: object = {}, agent = agentId) =>
    t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...as(org, 'agent'))
      .send({ tool, arguments: args, ...extra });
  const approve = (approvalId: string) =>
    t.http
      .post(`/api/v1/approvals/${approvalId}/approve`)
      .set(...as(org, 'approver'))
      .send({ note: 'fine' });

  const spec = (resources: object) => ({
    instructions: 'You are the Acme support assistant. Be brief.',
    capabilities: [
      { id: 'knowledge', config: { maxResults: 3 } },
      { id: 'skills' },
      { id: 'memory' },
      { id: 'memory-write', config: { maxMemories: 50 } },
      { id: 'thinking', config: { effort: 'high' } },
      { id: 'budget', config: { maxToolCallsPerRun: 5 } },
      { id: 'compaction', config: { strategy: 'summarize', keepLastTurns: 6 } },
    ],
    resources,
  });

  async function newAgent(o: TestOrg, slug: string): Promise<string> {
    return (
      await t.http
        .post('/api/v1/agents')
        .set(...as(o, 'builder'))
        .send({ slug, name: 'Support assistant' })
        .expect(201)
    ).body.id;
  }

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t, SCOPES);
    collection = await createCollection(t, org, 'Support handbook', 'Refunds, shipping and accounts');
    docs.refunds = await addDocument(
      t,
      org,
      collection,
      'Refund policy',
      'Customers can ask for a refund within 30 days of delivery. Refunds go back to the original card.',
    );
    docs.shipping = await addDocument(t, org, collection, 'Shipping', 'Parcels ship within two working days.');
    hidden = await createCollection(t, org, 'Internal');
    docs.hidden = await addDocument(t, org, hidden, 'Refund fraud notes', 'Never shown to the agent.');
    const skill = await createSkill(
      t,
      org,
      'Refund request',
      'When a customer asks for money back',
      '1. Ask for the order number.\n2. Check the refund policy.',
    );

    agentId = await newAgent(org, 'support');
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...as(org, 'builder'))
      .send(spec({ knowledgeCollections: [collection], skills: [skill] }))
      .expect(200);
    const published = await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...as(org, 'builder'))
      .expect(201);
    expect(published.body.version).toBe(1);
    expect(Object.keys(published.body.toolDigests).sort()).toEqual([
      'forget',
      'list_skills',
      'load_skill',
      'read_document',
      'recall_memories',
      'remember',
      'search_knowledge',
    ]);
  });
  afterAll(() => t.close());

  it('publishes the normalized spec with every config default filled in', async () => {
    const version = await t.http
      .get(`/api/v1/agents/${agentId}/versions/latest`)
      .set(...as(org, 'viewer'))
      .expect(200);
    expect(version.body.spec.capabilities).toEqual([
      { id: 'knowledge', config: { maxResults: 3 } },
      { id: 'skills', config: {} },
      { id: 'memory', config: { maxResults: 5 } },
      { id: 'memory-write', config: { maxMemories: 50 } },
      { id: 'thinking', config: { effort: 'high' } },
      { id: 'budget', config: { maxToolCallsPerRun: 5 } },
      { id: 'compaction', config: { strategy: 'summarize', keepLastTurns: 6, summaryPrompt: expect.stringContaining('Summarize the conversation') } },
    ]);
    expect(version.body.drift).toEqual([]);
  });

  it('serves a manifest with the prompt guidance in spec order, the settings, and the seven tools', async () => {
    const manifest = (
      await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest`)
        .set(...as(org, 'agent'))
        .expect(200)
    ).body;
    const prompt: string = manifest.systemPrompt;
    const order = [
      'You are the Acme support assistant.',
      '- **Support handbook** (2 documents): Refunds, shipping and accounts',
      '- **Refund request**: When a customer asks for money back',
      'with `recall_memories`',
      'with `remember`',
      'You may make at most 5 tool calls in one run',
      'turns older than the last 6 are replaced by a summary',
    ].map((text) => prompt.indexOf(text));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(prompt).not.toContain('Internal');
    expect(prompt).not.toContain('Ask for the order number');

    expect(manifest.settings).toEqual({
      thinking: { effort: 'high' },
      budget: { limits: { maxToolCallsPerRun: 5 } },
      compaction: { strategy: 'summarize', keepLastTurns: 6, summaryPrompt: expect.stringContaining('Summarize the conversation') },
    });
    expect(
      manifest.tools.map((x: { name: string; capabilityId: string; risk: string; requiresApproval: boolean }) => [
        x.name,
        x.capabilityId,
        x.risk,
        x.requiresApproval,
      ]),
    ).toEqual([
      ['search_knowledge', 'knowledge', 'read_only', false],
      ['read_document', 'knowledge', 'read_only', false],
      ['list_skills', 'skills', 'read_only', false],
      ['load_skill', 'skills', 'read_only', false],
      ['recall_memories', 'memory', 'read_only', false],
      ['remember', 'memory-write', 'mutating', true],
      ['forget', 'memory-write', 'destructive', true],
    ]);
  });

  it('runs the knowledge tools: a ranked search, a page of a document, and not-found for a document it does not bind', async () => {
    const search = await call('search_knowledge', { query: 'refund' }).expect(200);
    expect(search.body).toMatchObject({ status: 'succeeded', capabilityId: 'knowledge', arguments: { query: 'refund' } });
    expect(search.body.result.results[0]).toMatchObject({ documentId: docs.refunds, title: 'Refund policy', snippet: expect.stringContaining('**refund**') });
    expect(search.body.result.results.map((r: { documentId: string }) => r.documentId)).not.toContain(docs.hidden);

    const read = await call('read_document', { documentId: docs.refunds, maxChars: 500 }).expect(200);
    expect(read.body).toMatchObject({
      status: 'succeeded',
      arguments: { documentId: docs.refunds, offset: 0, maxChars: 500 },
      result: { title: 'Refund policy', nextOffset: null },
    });

    const outside = await call('read_document', { documentId: docs.hidden }).expect(200);
    expect(outside.body).toMatchObject({ status: 'failed', error: { code: 'document_not_found', message: expect.stringContaining('Use search_knowledge') } });

    const bad = await call('search_knowledge', { query: '', limit: 50 }).expect(422);
    expect(bad.body.code).toBe('invalid_arguments');
    expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['arguments.limit', 'arguments.query']);
  });

  it('runs the skills tools, and answers a skill that is not bound with an error the model can act on', async () => {
    const list = await call('list_skills', {}).expect(200);
    expect(list.body.result).toEqual({ skills: [{ id: expect.any(String), name: 'Refund request', description: 'When a customer asks for money back' }] });
    const load = await call('load_skill', { name: 'refund request' }).expect(200);
    expect(load.body.result.instructions).toBe('1. Ask for the order number.\n2. Check the refund policy.');
    const unknown = await call('load_skill', { name: 'Payroll' }).expect(200);
    expect(unknown.body).toMatchObject({
      status: 'failed',
      error: { code: 'skill_not_found', message: expect.stringContaining('Your skills are: "Refund request"') },
    });
  });

  it('remembers and forgets only through approval, and recalls what was approved', async () => {
    const empty = await call('recall_memories', { query: 'language' }).expect(200);
    expect(empty.body.result).toMatchObject({ memories: [], message: expect.stringContaining('no memories yet') });

    const asked = await call('remember', { content: 'Prefers answers in French', tags: ['language'] }).expect(202);
    expect(asked.body).toMatchObject({ status: 'pending_approval', approvalId: expect.any(String), capabilityId: 'memory-write' });
    expect((await call('recall_memories', { query: 'French' }).expect(200)).body.result.memories).toEqual([]);
    const approval = await t.http
      .get(`/api/v1/approvals/${asked.body.approvalId}`)
      .set(...as(org, 'approver'))
      .expect(200);
    expect(approval.body).toMatchObject({
      status: 'pending',
      reason: 'side_effecting',
      tool: 'remember',
      arguments: { content: 'Prefers answers in French', tags: ['language'] },
    });

    const remembered = await approve(asked.body.approvalId).expect(200);
    expect(remembered.body.toolCall).toMatchObject({
      id: asked.body.id,
      status: 'succeeded',
      result: { content: 'Prefers answers in French', alreadyRemembered: false, memoriesKept: 1, maxMemories: 50 },
    });
    const memoryId = remembered.body.toolCall.result.memoryId;

    const recalled = await call('recall_memories', { query: 'French' }).expect(200);
    expect(recalled.body.result.memories).toEqual([{ memoryId, content: 'Prefers answers in French', tags: ['language'], rememberedAt: expect.any(String) }]);

    const forgetting = await call('forget', { memoryId }).expect(202);
    expect(
      (
        await t.http
          .get(`/api/v1/approvals/${forgetting.body.approvalId}`)
          .set(...as(org, 'viewer'))
          .expect(200)
      ).body.reason,
    ).toBe('side_effecting');
    const forgotten = await approve(forgetting.body.approvalId).expect(200);
    expect(forgotten.body.toolCall).toMatchObject({ status: 'succeeded', result: { memoryId, forgotten: true } });
    expect((await call('recall_memories', { query: 'French' }).expect(200)).body.result.memories).toEqual([]);

    // Forgetting it again is approved, then fails as a result the model can read.
    const again = await call('forget', { memoryId }).expect(202);
    expect((await approve(again.body.approvalId).expect(200)).body.toolCall).toMatchObject({ status: 'failed', error: { code: 'memory_not_found' } });

    const events = await t.http
      .get('/api/v1/audit-events?limit=200')
      .set(...as(org, 'admin'))
      .expect(200);
    const trail = events.body.items.filter(
      (e: { data: { toolCallId?: string }; target: { id: string } }) =>
        e.target.id === asked.body.id || e.target.id === asked.body.approvalId || e.data.toolCallId === asked.body.id,
    );
    expect(trail.map((e: { type: string }) => e.type).sort()).toEqual([
      'approval.approved',
      'approval.requested',
      'tool_call.requested',
      'tool_call.succeeded',
    ]);
  });

  it("refuses the run's calls past the budget with 429 budget_exceeded", async () => {
    const runId = `run-${randomUUID()}`;
    for (let i = 0; i < 5; i++) await call('list_skills', {}, { runId }).expect(200);
    const over = await call('list_skills', {}, { runId }).expect(429);
    expect(over.body.code).toBe('budget_exceeded');
    await call('list_skills', {}, { runId: `run-${randomUUID()}` }).expect(200);
  });

  it('refuses to publish without the scopes the capabilities need, and refuses the call when a scope is lost', async () => {
    const poor = await createOrg(t, ['memory:read']);
    const poorAgent = await newAgent(poor, 'support');
    await t.http
      .put(`/api/v1/agents/${poorAgent}/draft`)
      .set(...as(poor, 'builder'))
      .send(spec({}))
      .expect(200);
    const refused = await t.http
      .post(`/api/v1/agents/${poorAgent}/publish`)
      .set(...as(poor, 'builder'))
      .expect(422);
    expect(refused.body.code).toBe('spec_invalid');
    expect(refused.body.errors.filter((e: { code: string }) => e.code === 'scope_not_granted').map((e: { path: string }) => e.path)).toEqual([
      'capabilities[0]',
      'capabilities[3]',
    ]);

    await t.http
      .put(`/api/v1/orgs/${org.id}/scopes`)
      .set(...bearer(t.adminToken))
      .send({ scopes: ['knowledge:read', 'memory:read'] })
      .expect(200);
    try {
      const lost = await call('remember', { content: 'Anything' }).expect(403);
      expect(lost.body.code).toBe('scope_not_granted');
      await call('recall_memories', { query: 'anything' }).expect(200);
    } finally {
      await t.http
        .put(`/api/v1/orgs/${org.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: SCOPES })
        .expect(200);
    }
  });

  it('offers nothing of knowledge and skills to an agent that binds neither', async () => {
    const bare = await newAgent(org, 'bare');
    await t.http
      .put(`/api/v1/agents/${bare}/draft`)
      .set(...as(org, 'builder'))
      .send(spec({}))
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${bare}/publish`)
      .set(...as(org, 'builder'))
      .expect(201);
    const tools = await t.http
      .get(`/api/v1/agents/${bare}/versions/latest/tools`)
      .set(...as(org, 'agent'))
      .expect(200);
    expect(tools.body.items.map((x: { name: string }) => x.name)).toEqual(['recall_memories', 'remember', 'forget']);
    const res = await call('search_knowledge', { query: 'refund' }, {}, bare).expect(404);
    expect(res.body.code).toBe('unknown_tool');
  });

  it("names renamed tools by their offered names in the prompt, the other tools' texts and the tools' messages (a swap too)", async () => {
    const renamed = await newAgent(org, 'renamed');
    const { resources } = (
      await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest`)
        .set(...as(org, 'builder'))
        .expect(200)
    ).body.spec;
    await t.http
      .put(`/api/v1/agents/${renamed}/draft`)
      .set(...as(org, 'builder'))
      .send({
        ...spec(resources),
        toolOverrides: {
          search_knowledge: { name: 'read_document' },
          read_document: { name: 'search_knowledge' },
          load_skill: { name: 'use_skill' },
          remember: { name: 'note' },
          recall_memories: { name: 'recall' },
        },
      })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${renamed}/publish`)
      .set(...as(org, 'builder'))
      .expect(201);
    const manifest = (
      await t.http
        .get(`/api/v1/agents/${renamed}/versions/latest/manifest`)
        .set(...as(org, 'agent'))
        .expect(200)
    ).body;
    const prompt: string = manifest.systemPrompt;
    expect(prompt).toContain('search these knowledge collections with `read_document` and read their documents with `search_knowledge`');
    expect(prompt).toContain('load its instructions with `use_skill`');
    expect(prompt).toContain('with `note`, and drop');
    const tool = (name: string) => manifest.tools.find((x: { name: string }) => x.name === name);
    // `search_knowledge` is what reads documents here: its texts point at the search, offered as `read_document`.
    expect(tool('search_knowledge').description).toContain('Use this when a snippet from read_document is not enough');
    expect(tool('search_knowledge').inputSchema.properties.documentId.description).toBe('The documentId that read_document returned.');
    expect(tool('list_skills').description).toContain('load the one that fits with use_skill');
    const outside = await call('search_knowledge', { documentId: docs.hidden }, {}, renamed).expect(200);
    expect(outside.body.error.message).toContain('Use read_document to find the documentId');
    const forgetting = await call('forget', { memoryId: '00000000-0000-4000-8000-000000000000' }, {}, renamed).expect(202);
    const unknown = (await approve(forgetting.body.approvalId).expect(200)).body.toolCall;
    expect(unknown).toMatchObject({
      status: 'failed',
      error: { code: 'memory_not_found', message: expect.stringContaining('Use `recall` to find the memoryId') },
    });
    // An agent that renames nothing reads the texts as declared.
    const plain = (
      await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest`)
        .set(...as(org, 'agent'))
        .expect(200)
    ).body;
    expect(plain.systemPrompt).toContain('with `search_knowledge` and read their documents with `read_document`');
  });
});
