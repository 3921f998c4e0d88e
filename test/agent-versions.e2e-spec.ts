import type { StampedContribution } from '../src/capabilities/capability.types';
import { canonicalize } from 'json-canonicalize';
import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { VersionBuilder } from '../src/agents/version-builder.service';
import { AgentsFixturesModule, FX_NOTES_SCOPE } from './fixtures/agents-fixtures.module';
import { toolContext } from './support/builtins';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

describe('agent validation, publish, versions, offered tools and manifest (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp({ imports: [AgentsFixturesModule] });
    org = await createOrg(t, [FX_NOTES_SCOPE]);
  });
  afterAll(() => t.close());

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);
  let slugs = 0;

  async function agentWith(o: TestOrg, draft: object): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(o, 'builder'))
      .send({ slug: `agent-${++slugs}`, name: `Agent ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(o, 'builder'))
      .send(draft)
      .expect(200);
    return a.body.id;
  }

  const publish = (o: TestOrg, agentId: string) => t.http.post(`/api/v1/agents/${agentId}/publish`).set(...as(o, 'builder'));

  describe('validation', () => {
    it('says a good draft is valid', async () => {
      const id = await agentWith(org, { instructions: 'Hi', capabilities: [{ id: 'fx-agents-notes' }, { id: 'fx-agents-echo' }] });
      const res = await t.http
        .post(`/api/v1/agents/${id}/draft/validate`)
        .set(...as(org, 'builder'))
        .expect(200);
      expect(res.body).toEqual({ valid: true, errors: [] });
    });

    it('reports every problem at once, each with its code and path; publish refuses the same way and writes nothing', async () => {
      const other = await createOrg(t, [FX_NOTES_SCOPE]);
      const foreign = await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as(other, 'builder'))
        .send({ name: 'theirs' })
        .expect(201);
      const unscoped = await createOrg(t);
      const id = await agentWith(unscoped, {
        instructions: 'x',
        capabilities: [
          { id: 'fx-agents-notes', config: { units: 'furlongs', colour: 'red' } },
          { id: 'fx-agents-nope' },
          { id: 'fx-agents-notes' },
          { id: 'fx-agents-echo' },
        ],
        resources: { knowledgeCollections: [foreign.body.id], skills: [randomUUID()] },
        toolApproval: { fx_agents_echo: 'required', fx_agents_ghost: 'required' },
        toolOverrides: {
          fx_agents_phantom: { name: 'phantom' },
          fx_agents_search: { name: 'not a name!' },
          fx_agents_write: { name: 'fx_agents_echo' },
          fx_agents_pause: { description: 'fine' },
        },
      });
      const expected = [
        { path: 'capabilities[0].config.colour', code: 'invalid_config' },
        { path: 'capabilities[0].config.units', code: 'invalid_config' },
        { path: 'capabilities[0]', code: 'scope_not_granted' },
        { path: 'capabilities[1].id', code: 'unknown_capability' },
        { path: 'capabilities[2].id', code: 'duplicate_capability' },
        { path: 'toolApproval.fx_agents_ghost', code: 'unknown_tool' },
        { path: 'toolOverrides.fx_agents_phantom', code: 'unknown_tool' },
        { path: 'toolOverrides.fx_agents_search.name', code: 'invalid_tool_name' },
        { path: 'toolOverrides.fx_agents_write.name', code: 'duplicate_tool_name' },
        { path: 'resources.knowledgeCollections[0]', code: 'unknown_resource' },
        { path: 'resources.skills[0]', code: 'unknown_resource' },
      ];
      const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : 1);
      const res = await t.http
        .post(`/api/v1/agents/${id}/draft/validate`)
        .set(...as(unscoped, 'builder'))
        .expect(200);
      expect(res.body.valid).toBe(false);
      expect(res.body.errors.map((e: { path: string; code: string }) => ({ path: e.path, code: e.code })).sort(byPath)).toEqual([...expected].sort(byPath));
      for (const e of res.body.errors) expect(typeof e.message).toBe('string');

      const refused = await publish(unscoped, id).expect(422);
      expect(refused.headers['content-type']).toMatch(/problem\+json/);
      expect(refused.body.code).toBe('spec_invalid');
      expect(refused.body.errors.map((e: { path: string; code: string }) => ({ path: e.path, code: e.code })).sort(byPath)).toEqual([...expected].sort(byPath));
      const agent = await t.http
        .get(`/api/v1/agents/${id}`)
        .set(...as(unscoped, 'viewer'))
        .expect(200);
      expect(agent.body.latestVersion).toBeNull();
      const versions = await t.http
        .get(`/api/v1/agents/${id}/versions`)
        .set(...as(unscoped, 'viewer'))
        .expect(200);
      expect(versions.body).toEqual({ items: [], nextCursor: null });
    });

    it("refuses an override name equal to another override's, on both", async () => {
      const id = await agentWith(org, {
        instructions: '',
        capabilities: [{ id: 'fx-agents-echo' }],
        toolOverrides: { fx_agents_echo: { name: 'same' }, fx_agents_pause: { name: 'same' } },
      });
      const res = await t.http
        .post(`/api/v1/agents/${id}/draft/validate`)
        .set(...as(org, 'builder'))
        .expect(200);
      expect(res.body.errors.map((e: { path: string; code: string }) => [e.path, e.code]).sort()).toEqual([
        ['toolOverrides.fx_agents_echo.name', 'duplicate_tool_name'],
        ['toolOverrides.fx_agents_pause.name', 'duplicate_tool_name'],
      ]);
      // Swapping names is no collision.
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({
          instructions: '',
          capabilities: [{ id: 'fx-agents-echo' }],
          toolOverrides: { fx_agents_echo: { name: 'fx_agents_pause' }, fx_agents_pause: { name: 'fx_agents_echo' } },
        })
        .expect(200);
      const swapped = await t.http
        .post(`/api/v1/agents/${id}/draft/validate`)
        .set(...as(org, 'builder'))
        .expect(200);
      expect(swapped.body).toEqual({ valid: true, errors: [] });
    });
  });

  describe('publish', () => {
    it('stores the normalized spec with its hash, publisher and audit event', async () => {
      const id = await agentWith(org, {
        instructions: 'Be brief.',
        capabilities: [{ id: 'fx-agents-notes', config: { units: 'imperial' } }, { id: 'fx-agents-budget' }],
      });
      const res = await publish(org, id).expect(201);
      const spec = {
        instructions: 'Be brief.',
        capabilities: [
          { id: 'fx-agents-notes', config: { units: 'imperial', limit: 5 } },
          { id: 'fx-agents-budget', config: { maxToolCalls: 7 } },
        ],
        resources: { knowledgeCollections: [], skills: [] },
        toolApproval: {},
        toolOverrides: {},
      };
      expect(res.body).toEqual({
        agentId: id,
        version: 1,
        spec,
        specHash: sha256(canonicalize(spec)),
        toolDigests: { fx_agents_search: expect.stringMatching(/^[0-9a-f]{64}$/), fx_agents_write: expect.stringMatching(/^[0-9a-f]{64}$/) },
        drift: [],
        publishedAt: expect.any(String),
        publishedBy: org.keyIds.builder,
        retiredAt: null,
      });
      const agent = await t.http
        .get(`/api/v1/agents/${id}`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(agent.body.latestVersion).toBe(1);
      const events = await t.http
        .get('/api/v1/audit-events?type=agent.published')
        .set(...as(org, 'admin'))
        .expect(200);
      expect(events.body.items[0]).toMatchObject({
        actor: { type: 'api_key', id: org.keyIds.builder },
        target: { type: 'agent', id },
        data: { version: 1, specHash: res.body.specHash, toolDigests: res.body.toolDigests },
      });
    });

    it('answers 200 with the latest version when nothing changed, even if the draft is written differently', async () => {
      const id = await agentWith(org, { instructions: 'Same', capabilities: [{ id: 'fx-agents-notes' }] });
      const first = await publish(org, id).expect(201);
      const again = await publish(org, id).expect(200);
      expect(again.body).toEqual(first.body);
      // The defaults spelled out and empty resources: the same normalized spec.
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({
          instructions: 'Same',
          capabilities: [{ id: 'fx-agents-notes', config: { limit: 5, units: 'metric' } }],
          resources: {},
          toolApproval: {},
          toolOverrides: {},
        })
        .expect(200);
      await publish(org, id).expect(200);
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: 'Changed', capabilities: [{ id: 'fx-agents-notes' }] })
        .expect(200);
      const second = await publish(org, id).expect(201);
      expect(second.body.version).toBe(2);
    });

    it("publishes an older version's content again as a new version (a rollback), since it differs from the latest", async () => {
      // API.md: 200 only when the draft equals the LATEST version; this answered 409 conflict, which
      // left no way to make version 1's configuration `latest` again.
      const id = await agentWith(org, { instructions: 'Good', capabilities: [{ id: 'fx-agents-notes' }] });
      const v1 = await publish(org, id).expect(201);
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: 'Broken', capabilities: [{ id: 'fx-agents-notes' }] })
        .expect(200);
      await publish(org, id).expect(201);
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: 'Good', capabilities: [{ id: 'fx-agents-notes' }] })
        .expect(200);
      const back = await publish(org, id).expect(201);
      expect(back.body).toMatchObject({ version: 3, specHash: v1.body.specHash, toolDigests: v1.body.toolDigests, drift: [] });
      expect((await publish(org, id).expect(200)).body.version).toBe(3);
      const latest = await t.http
        .get(`/api/v1/agents/${id}/versions/latest`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(latest.body.version).toBe(3);
      const list = await t.http
        .get(`/api/v1/agents/${id}/versions`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(list.body.items.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    });

    it('treats a change of approval as a change of the tool definitions', async () => {
      const id = await agentWith(org, { instructions: '', capabilities: [{ id: 'fx-agents-echo' }] });
      const v1 = await publish(org, id).expect(201);
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: '', capabilities: [{ id: 'fx-agents-echo' }], toolApproval: { fx_agents_echo: 'required' } })
        .expect(200);
      const v2 = await publish(org, id).expect(201);
      expect(v2.body.toolDigests.fx_agents_echo).not.toBe(v1.body.toolDigests.fx_agents_echo);
      expect(v2.body.toolDigests.fx_agents_pause).toBe(v1.body.toolDigests.fx_agents_pause);
    });

    it('keeps published versions immutable: no route changes them and the database refuses', async () => {
      const id = await agentWith(org, { instructions: 'Frozen', capabilities: [] });
      await publish(org, id).expect(201);
      for (const method of ['put', 'patch', 'delete'] as const) {
        const res = await t.http[method](`/api/v1/agents/${id}/versions/1`)
          .set(...as(org, 'admin'))
          .send({});
        expect([404, 405]).toContain(res.status);
      }
      const ds = t.app.get(DataSource);
      await expect(ds.query(`UPDATE agent_version SET spec_hash = 'x' WHERE agent_id = $1`, [id])).rejects.toThrow(/immutable/);
      await expect(ds.query(`DELETE FROM agent_version WHERE agent_id = $1`, [id])).rejects.toThrow(/immutable/);
      // One number, one version: the key holds even for a writer that skips the agent lock.
      const copy = ds.query(
        `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by)
         SELECT org_id, agent_id, 1, spec, spec_hash, tool_digests, 'other', published_by FROM agent_version WHERE agent_id = $1 AND version = 1`,
        [id],
      );
      await expect(copy).rejects.toThrow(/agent_version_pkey/);
      const still = await t.http
        .get(`/api/v1/agents/${id}/versions/1`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(still.body.spec.instructions).toBe('Frozen');
    });

    it('gives 20 simultaneous publishes of one draft exactly one version', async () => {
      const id = await agentWith(org, { instructions: 'race', capabilities: [{ id: 'fx-agents-notes' }, { id: 'fx-agents-echo' }] });
      const answers = await Promise.all(Array.from({ length: 20 }, () => publish(org, id)));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([...Array(19).fill(200), 201]);
      expect(new Set(answers.map((a) => a.body.version))).toEqual(new Set([1]));
      const list = await t.http
        .get(`/api/v1/agents/${id}/versions`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(list.body.items).toHaveLength(1);
    });

    it('keeps version numbers gapless and never publishes the latest content again when drafts and publishes race', async () => {
      // On PostgreSQL these requests truly overlap; on the embedded database they serialize. The
      // guarantees hold either way, and the assertions do not depend on the interleaving.
      const id = await agentWith(org, { instructions: 'start', capabilities: [] });
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          await t.http
            .put(`/api/v1/agents/${id}/draft`)
            .set(...as(org, 'builder'))
            .send({ instructions: `draft ${i % 7}`, capabilities: [] })
            .expect(200);
          return publish(org, id);
        }),
      );
      // A publish that saw the draft saved again three times while it checked it is `409 conflict`,
      // nothing published (docs/api.md): rare, but these drafts are saved as fast as the node goes.
      for (const a of answers) {
        if (a.status === 409) expect(a.body.code).toBe('conflict');
        else expect([200, 201]).toContain(a.status);
      }
      expect(answers.some((a) => a.status === 201)).toBe(true);
      const created = answers
        .filter((a) => a.status === 201)
        .map((a) => a.body.version)
        .sort((x, y) => x - y);
      const list = await t.http
        .get(`/api/v1/agents/${id}/versions?limit=200`)
        .set(...as(org, 'viewer'))
        .expect(200);
      const versions = list.body.items.map((v: { version: number }) => v.version).sort((x: number, y: number) => x - y);
      expect(versions).toEqual(Array.from({ length: versions.length }, (_, i) => i + 1));
      expect(created).toEqual(versions);
      // Each version differs from the one before it (a 200 answers an unchanged draft).
      const hashes: string[] = list.body.items.map((v: { specHash: string }) => v.specHash);
      hashes.slice(1).forEach((h, i) => expect(h).not.toBe(hashes[i]));
      const agent = await t.http
        .get(`/api/v1/agents/${id}`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(agent.body.latestVersion).toBe(versions[versions.length - 1]);
    });
  });

  describe('reading versions', () => {
    let agentId: string;
    let collectionId: string;
    beforeAll(async () => {
      const c = await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as(org, 'builder'))
        .send({ name: 'Handbook' })
        .expect(201);
      collectionId = c.body.id;
      await t.http
        .post(`/api/v1/knowledge/collections/${collectionId}/documents`)
        .set(...as(org, 'builder'))
        .send({ title: 'a', content: 'b' })
        .expect(201);
      agentId = await agentWith(org, {
        instructions: 'You help.',
        capabilities: [
          { id: 'fx-agents-echo' },
          { id: 'fx-agents-budget', config: { maxToolCalls: 3 } },
          { id: 'fx-agents-notes' },
          { id: 'fx-agents-library' },
        ],
        resources: { knowledgeCollections: [collectionId] },
        toolApproval: { fx_agents_echo: 'required' },
        toolOverrides: { fx_agents_search: { name: 'find_notes', description: 'Find a note by words in it.' } },
      });
      await publish(org, agentId).expect(201);
    });

    it('offers the tools with overrides and approval applied, by number and as latest', async () => {
      const res = await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/tools`)
        .set(...as(org, 'agent'))
        .expect(200);
      const schemaOf = (name: string) => res.body.items.find((x: { name: string }) => x.name === name).inputSchema;
      expect(res.body.items.map(({ inputSchema: _s, ...rest }: { inputSchema: unknown }) => rest)).toEqual([
        {
          name: 'fx_agents_echo',
          description: 'Echo the text back.',
          capabilityId: 'fx-agents-echo',
          toolId: 'fx_agents_echo',
          risk: 'read_only',
          requiresApproval: true,
        },
        {
          name: 'fx_agents_pause',
          description: 'Echo, but only after a person looked.',
          capabilityId: 'fx-agents-echo',
          toolId: 'fx_agents_pause',
          risk: 'read_only',
          requiresApproval: true,
        },
        {
          name: 'find_notes',
          description: 'Find a note by words in it.',
          capabilityId: 'fx-agents-notes',
          toolId: 'fx_agents_search',
          risk: 'read_only',
          requiresApproval: false,
        },
        {
          name: 'fx_agents_write',
          description: 'Write a note.',
          capabilityId: 'fx-agents-notes',
          toolId: 'fx_agents_write',
          risk: 'mutating',
          requiresApproval: true,
        },
        {
          name: 'fx_agents_lookup',
          description: 'Look something up.',
          capabilityId: 'fx-agents-library',
          toolId: 'fx_agents_lookup',
          risk: 'read_only',
          requiresApproval: false,
        },
      ]);
      expect(schemaOf('find_notes')).toMatchObject({ type: 'object', properties: { query: expect.objectContaining({ type: 'string' }) }, required: ['query'] });
      const byNumber = await t.http
        .get(`/api/v1/agents/${agentId}/versions/1/tools`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(byNumber.body).toEqual(res.body);
      const version = await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(Object.keys(version.body.toolDigests).sort()).toEqual(['find_notes', 'fx_agents_echo', 'fx_agents_lookup', 'fx_agents_pause', 'fx_agents_write']);
      expect(version.body.drift).toEqual([]);
    });

    it('renders the tools in the OpenAI and Anthropic function-calling shapes', async () => {
      const plain = await t.http
        .get(`/api/v1/agents/${agentId}/versions/1/tools`)
        .set(...as(org, 'agent'))
        .expect(200);
      const find = plain.body.items.find((x: { name: string }) => x.name === 'find_notes');
      const { $schema: _d, ...parameters } = find.inputSchema;
      const openai = await t.http
        .get(`/api/v1/agents/${agentId}/versions/1/tools?format=openai`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(openai.body.items).toHaveLength(5);
      expect(openai.body.items).toContainEqual({ type: 'function', function: { name: 'find_notes', description: 'Find a note by words in it.', parameters } });
      const anthropic = await t.http
        .get(`/api/v1/agents/${agentId}/versions/1/tools?format=anthropic`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(anthropic.body.items).toContainEqual({ name: 'find_notes', description: 'Find a note by words in it.', input_schema: parameters });
      const bad = await t.http
        .get(`/api/v1/agents/${agentId}/versions/1/tools?format=xml`)
        .set(...as(org, 'agent'))
        .expect(400);
      expect(bad.body.errors[0].path).toBe('format');
    });

    it("composes the manifest: instructions then each contributor's guidance in spec order, settings by capability", async () => {
      const res = await t.http
        .get(`/api/v1/agents/${agentId}/versions/latest/manifest`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(res.body).toEqual({
        agentId,
        version: 1,
        systemPrompt:
          'You help.\n\nEcho when asked to repeat.\n\nSearch your notes before you ask again.\n\nYou can look things up in: Handbook (1 documents).',
        tools: expect.any(Array),
        settings: {
          'fx-agents-budget': { historyPolicy: 'last-20', limits: { maxToolCallsPerRun: 3 } },
          'fx-agents-notes': { units: 'metric', limit: 5, limits: { maxToolCallsPerRun: 20 } },
        },
      });
      expect(res.body.tools.map((x: { name: string }) => x.name)).toEqual([
        'fx_agents_echo',
        'fx_agents_pause',
        'find_notes',
        'fx_agents_write',
        'fx_agents_lookup',
      ]);
    });

    it('leaves out a capability that builds to null', async () => {
      const id = await agentWith(org, { instructions: 'Nothing bound.', capabilities: [{ id: 'fx-agents-library' }, { id: 'fx-agents-echo' }] });
      await publish(org, id).expect(201);
      const res = await t.http
        .get(`/api/v1/agents/${id}/versions/1/manifest`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(res.body.systemPrompt).toBe('Nothing bound.\n\nEcho when asked to repeat.');
      expect(res.body.tools.map((x: { capabilityId: string }) => x.capabilityId)).toEqual(['fx-agents-echo', 'fx-agents-echo']);
    });

    it('hands the executor a version as data, and the implementations only to its sink', async () => {
      const builder = t.app.get(VersionBuilder);
      const contributions = new Map<string, StampedContribution>();
      const built = await builder.build(org.id, [FX_NOTES_SCOPE], agentId, 'latest', (c) => contributions.set(c.capabilityId, c));
      expect(built).toMatchObject({ orgId: org.id, agentId, version: 1, limits: { maxToolCallsPerRun: 3 } });
      const byName = Object.fromEntries(built.tools.map((x) => [x.name, x]));
      expect(byName.fx_agents_write).toMatchObject({ approvalReason: 'side_effecting', requiresApproval: true, scopes: [FX_NOTES_SCOPE] });
      expect(byName.fx_agents_pause).toMatchObject({ approvalReason: 'interrupt_before', requiresApproval: true, scopes: [] });
      expect(byName.fx_agents_echo).toMatchObject({ approvalReason: 'spec_required', requiresApproval: true });
      expect(byName.find_notes).toMatchObject({
        approvalReason: null,
        requiresApproval: false,
        toolId: 'fx_agents_search',
        declaration: expect.objectContaining({ id: 'fx_agents_search' }),
      });
      for (const tool of built.tools) {
        expect(tool.digest).toMatch(/^[0-9a-f]{64}$/);
        expect(tool.pinnedDigest).toBe(tool.digest);
        expect(Object.values(tool).some((v) => typeof v === 'function')).toBe(false);
      }
      const implementation = (name: string) => contributions.get(byName[name].capabilityId)!.tools.find((x) => x.id === byName[name].toolId)!;
      const ctx = toolContext(org.id, agentId);
      await expect(Promise.resolve(implementation('find_notes').execute({ query: 'x' }, ctx))).resolves.toEqual({
        tool: 'fx_agents_search',
        args: { query: 'x' },
        units: 'metric',
      });
      await expect(Promise.resolve(implementation('fx_agents_lookup').execute({ query: 'q' }, ctx))).resolves.toEqual({
        query: 'q',
        searched: ['Handbook (1 documents)'],
      });
      // A lost scope does not stop the build: the executor checks scopes per tool, in its own order.
      const unscoped = await builder.build(org.id, [], agentId, 1);
      expect(unscoped.tools).toHaveLength(5);
    });

    it('refuses unknown agents and versions as the executor expects', async () => {
      const builder = t.app.get(VersionBuilder);
      const other = await createOrg(t);
      await expect(builder.build(other.id, [], agentId, 'latest')).rejects.toMatchObject({ status: 404, code: 'not_found' });
      await expect(builder.build(org.id, [], agentId, 99)).rejects.toMatchObject({ status: 404, code: 'not_found' });
      const unpublished = await agentWith(org, { instructions: '', capabilities: [] });
      await expect(builder.build(org.id, [], unpublished, 'latest')).rejects.toMatchObject({ status: 409, code: 'not_published' });

      for (const path of ['', '/tools', '/manifest']) {
        const notPublished = await t.http
          .get(`/api/v1/agents/${unpublished}/versions/latest${path}`)
          .set(...as(org, 'agent'))
          .expect(409);
        expect(notPublished.body.code).toBe('not_published');
        await t.http
          .get(`/api/v1/agents/${agentId}/versions/99${path}`)
          .set(...as(org, 'agent'))
          .expect(404);
        await t.http
          .get(`/api/v1/agents/${agentId}/versions/0${path}`)
          .set(...as(org, 'agent'))
          .expect(404);
        await t.http
          .get(`/api/v1/agents/${agentId}/versions/abc${path}`)
          .set(...as(org, 'agent'))
          .expect(404);
        const foreign = await t.http
          .get(`/api/v1/agents/${agentId}/versions/1${path}`)
          .set(...as(other, 'agent'))
          .expect(404);
        expect(foreign.body.code).toBe('not_found');
      }
      await t.http
        .get(`/api/v1/agents/${agentId}/versions`)
        .set(...as(other, 'agent'))
        .expect(404);
      await publish(other, agentId).expect(404);
      await t.http
        .post(`/api/v1/agents/${agentId}/draft/validate`)
        .set(...as(other, 'builder'))
        .expect(404);
    });

    it("refuses to serve tools and manifest when a contributing capability's scope was revoked", async () => {
      const o = await createOrg(t, [FX_NOTES_SCOPE]);
      const id = await agentWith(o, { instructions: '', capabilities: [{ id: 'fx-agents-notes' }, { id: 'fx-agents-echo' }] });
      await publish(o, id).expect(201);
      await t.http
        .put(`/api/v1/orgs/${o.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [] })
        .expect(200);
      for (const path of ['tools', 'manifest']) {
        const res = await t.http
          .get(`/api/v1/agents/${id}/versions/latest/${path}`)
          .set(...as(o, 'agent'))
          .expect(403);
        expect(res.body).toMatchObject({ code: 'scope_not_granted', missingScopes: [{ capabilityId: 'fx-agents-notes', missing: [FX_NOTES_SCOPE] }] });
      }
      await t.http
        .get(`/api/v1/agents/${id}/versions/latest`)
        .set(...as(o, 'viewer'))
        .expect(200);
      const check = await t.http
        .post(`/api/v1/agents/${id}/draft/validate`)
        .set(...as(o, 'builder'))
        .expect(200);
      expect(check.body.errors).toEqual([{ path: 'capabilities[0]', code: 'scope_not_granted', message: expect.stringContaining(FX_NOTES_SCOPE) }]);
      await t.http
        .put(`/api/v1/orgs/${o.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [FX_NOTES_SCOPE] })
        .expect(200);
      await t.http
        .get(`/api/v1/agents/${id}/versions/latest/tools`)
        .set(...as(o, 'agent'))
        .expect(200);
    });

    it('lists versions newest first with cursor pages', async () => {
      const id = await agentWith(org, { instructions: 'v1', capabilities: [] });
      for (const n of [1, 2, 3]) {
        await t.http
          .put(`/api/v1/agents/${id}/draft`)
          .set(...as(org, 'builder'))
          .send({ instructions: `v${n}`, capabilities: [] })
          .expect(200);
        await publish(org, id).expect(201);
      }
      const first = await t.http
        .get(`/api/v1/agents/${id}/versions?limit=2`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(first.body.items.map((v: { version: number }) => v.version)).toEqual([3, 2]);
      const second = await t.http
        .get(`/api/v1/agents/${id}/versions?limit=2&cursor=${first.body.nextCursor}`)
        .set(...as(org, 'agent'))
        .expect(200);
      expect(second.body.items.map((v: { version: number }) => v.version)).toEqual([1]);
      expect(second.body.nextCursor).toBeNull();
    });
  });

  describe('resources bound by versions', () => {
    it('refuses deleting a collection or skill a published version binds, and allows the rest', async () => {
      const bound = await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as(org, 'builder'))
        .send({ name: 'bound' })
        .expect(201);
      const free = await t.http
        .post('/api/v1/knowledge/collections')
        .set(...as(org, 'builder'))
        .send({ name: 'free' })
        .expect(201);
      const skill = await t.http
        .post('/api/v1/skills')
        .set(...as(org, 'builder'))
        .send({ name: 's', description: 'd', instructions: 'i' })
        .expect(201);
      const id = await agentWith(org, {
        instructions: '',
        capabilities: [{ id: 'fx-agents-library' }],
        resources: { knowledgeCollections: [bound.body.id], skills: [skill.body.id] },
      });
      const v = await publish(org, id).expect(201);
      expect(v.body.spec.resources).toEqual({ knowledgeCollections: [bound.body.id], skills: [skill.body.id] });
      const refused = await t.http
        .delete(`/api/v1/knowledge/collections/${bound.body.id}`)
        .set(...as(org, 'builder'))
        .expect(409);
      expect(refused.body).toMatchObject({ code: 'resource_in_use', boundBy: [{ agentId: id, version: 1 }] });
      const refusedSkill = await t.http
        .delete(`/api/v1/skills/${skill.body.id}`)
        .set(...as(org, 'builder'))
        .expect(409);
      expect(refusedSkill.body.code).toBe('resource_in_use');
      // A draft that merely mentions a collection does not bind it.
      await t.http
        .put(`/api/v1/agents/${id}/draft`)
        .set(...as(org, 'builder'))
        .send({ instructions: '', capabilities: [], resources: { knowledgeCollections: [free.body.id] } })
        .expect(200);
      await t.http
        .delete(`/api/v1/knowledge/collections/${free.body.id}`)
        .set(...as(org, 'builder'))
        .expect(204);
      // Its documents may still change; the collection itself stays.
      const doc = await t.http
        .post(`/api/v1/knowledge/collections/${bound.body.id}/documents`)
        .set(...as(org, 'builder'))
        .send({ title: 't', content: 'c' })
        .expect(201);
      await t.http
        .delete(`/api/v1/knowledge/collections/${bound.body.id}/documents/${doc.body.id}`)
        .set(...as(org, 'builder'))
        .expect(204);
      await t.http
        .get(`/api/v1/knowledge/collections/${bound.body.id}`)
        .set(...as(org, 'viewer'))
        .expect(200);
      // The database refuses too, whatever the code does.
      await expect(t.app.get(DataSource).query(`DELETE FROM knowledge_collection WHERE id = $1`, [bound.body.id])).rejects.toThrow(/foreign key/);
    });
  });

  describe('roles', () => {
    it('lets builders validate and publish, and viewers and agents read', async () => {
      const id = await agentWith(org, { instructions: '', capabilities: [] });
      for (const role of ['viewer', 'agent', 'approver'] as const) {
        await publish(org, id)
          .set(...as(org, role))
          .expect(403);
        await t.http
          .post(`/api/v1/agents/${id}/draft/validate`)
          .set(...as(org, role))
          .expect(403);
      }
      await t.http
        .post(`/api/v1/agents/${id}/publish`)
        .set(...as(org, 'admin'))
        .expect(201);
      for (const role of ['viewer', 'agent', 'approver', 'builder'] as const) {
        await t.http
          .get(`/api/v1/agents/${id}/versions`)
          .set(...as(org, role))
          .expect(200);
        await t.http
          .get(`/api/v1/agents/${id}/versions/latest/manifest`)
          .set(...as(org, role))
          .expect(200);
      }
      await t.http
        .get(`/api/v1/agents/${id}/versions`)
        .set(...bearer(t.adminToken))
        .expect(403);
    });

    it('documents every route of this feature in OpenAPI', async () => {
      const doc = await t.http.get('/api/docs-json').expect(200);
      const base = '/api/v1/agents/{agentId}';
      expect(doc.body.paths[`${base}/draft/validate`].post.responses['200']).toBeDefined();
      expect(doc.body.paths[`${base}/publish`].post.responses['201']).toBeDefined();
      expect(doc.body.paths[`${base}/publish`].post.responses['422']).toBeDefined();
      expect(doc.body.paths[`${base}/versions`].get).toBeDefined();
      expect(doc.body.paths[`${base}/versions/{version}`].get).toBeDefined();
      expect(doc.body.paths[`${base}/versions/{version}/tools`].get.parameters.map((p: { name: string }) => p.name)).toEqual(
        expect.arrayContaining(['agentId', 'version', 'format']),
      );
      expect(doc.body.paths[`${base}/versions/{version}/manifest`].get.responses['200']).toBeDefined();
      expect(doc.body.components.schemas.AgentVersionView.properties.drift).toBeDefined();
    });
  });
});
