import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { canonicalHash } from '../src/agents/digests';
import { IdempotencyRepository } from '../src/tool-calls/idempotency.repository';
import { ToolCallSweeper } from '../src/tool-calls/tool-call-sweeper.service';
import { ApprovalsRepository } from '../src/tool-calls/approvals.repository';
import { DRIFTING_TOOL, ExecFixturesModule, FX_EXEC_SCOPE, fixtureRuns, holdSlowCall, HUGE_ROWS, runsTagged } from './fixtures/exec-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';

/** API.md "Tool calls" and "Approvals": every answer of both tables, on either database. */
describe('tool calls and approvals (e2e)', () => {
  let t: TestApp;
  let ds: DataSource;
  let org: TestOrg;
  let agentId: string;
  const TIMEOUT_MS = 400;

  beforeAll(async () => {
    t = await createTestApp({ imports: [ExecFixturesModule], config: { toolTimeoutMs: TIMEOUT_MS } });
    ds = t.app.get(DataSource);
    // Sweeps happen when a test asks for one, never in the middle of a test's arrangement.
    await t.app.get(ToolCallSweeper).stop();
    org = await createOrg(t, [FX_EXEC_SCOPE]);
    agentId = await publishedAgent(org, {
      instructions: 'Use the fixtures.',
      capabilities: [{ id: 'fx-exec-tools' }, { id: 'fx-exec-crm' }],
      toolApproval: { 'fx-exec-fail': 'required' },
      toolOverrides: { 'fx-exec-read': { name: 'search_records' } },
    });
  });
  afterAll(() => t.close());

  const as = (o: TestOrg, role: keyof TestOrg['keys']) => bearer(o.keys[role]);
  let slugs = 0;

  async function publishedAgent(o: TestOrg, draft: object): Promise<string> {
    const a = await t.http
      .post('/api/v1/agents')
      .set(...as(o, 'builder'))
      .send({ slug: `exec-${++slugs}`, name: `Exec ${slugs}` })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${a.body.id}/draft`)
      .set(...as(o, 'builder'))
      .send(draft)
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${a.body.id}/publish`)
      .set(...as(o, 'builder'))
      .expect(201);
    return a.body.id;
  }

  const callTool = (body: object, o: TestOrg = org, agent: string = agentId, token = o.keys.agent) =>
    t.http
      .post(`/api/v1/agents/${agent}/tool-calls`)
      .set(...bearer(token))
      .send(body);

  async function extraKey(o: TestOrg, roles: string[]): Promise<string> {
    const res = await t.http
      .post(`/api/v1/orgs/${o.id}/api-keys`)
      .set(...bearer(o.keys.admin))
      .send({ name: roles.join('+'), roles })
      .expect(201);
    return res.body.token;
  }

  async function eventsOf(o: TestOrg, type: string): Promise<{ target: { id: string }; actor: { id: string }; data: Record<string, unknown> }[]> {
    const res = await t.http
      .get(`/api/v1/audit-events?type=${type}&limit=200`)
      .set(...as(o, 'admin'))
      .expect(200);
    return res.body.items;
  }

  describe('POST /agents/{agentId}/tool-calls', () => {
    it('200: runs a read-only tool by its offered name, with defaults applied, and records it', async () => {
      const res = await callTool({ tool: 'search_records', arguments: { query: 'invoices' }, runId: 'run-1' }).expect(200);
      expect(res.body).toEqual({
        id: expect.any(String),
        agentId,
        version: 1,
        tool: 'search_records',
        capabilityId: 'fx-exec-tools',
        toolId: 'fx-exec-read',
        runId: 'run-1',
        arguments: { query: 'invoices', limit: 5 },
        argumentsHash: canonicalHash({ query: 'invoices', limit: 5 }),
        status: 'succeeded',
        result: { query: 'invoices', limit: 5, hits: [] },
        resultTruncated: false,
        argumentsEdited: false,
        entryPoint: 'rest',
        requestedBy: org.keyIds.agent,
        createdAt: expect.any(String),
        completedAt: expect.any(String),
      });
      expect(fixtureRuns.at(-1)!.ctx).toEqual({ orgId: org.id, agentId, version: 1, callId: res.body.id, runId: 'run-1', effect: expect.any(Function) });
      const read = await t.http
        .get(`/api/v1/tool-calls/${res.body.id}`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(read.body).toEqual(res.body);
      const requested = (await eventsOf(org, 'tool_call.requested')).find((e) => e.target.id === res.body.id)!;
      expect(requested).toMatchObject({
        actor: { id: org.keyIds.agent },
        data: { argumentsHash: res.body.argumentsHash, tool: 'search_records', entryPoint: 'rest' },
      });
      expect((await eventsOf(org, 'tool_call.succeeded')).some((e) => e.target.id === res.body.id)).toBe(true);
    });

    it('200 failed: a ToolError, a crash (without internals) and a timeout are results', async () => {
      const tag = randomUUID();
      const crash = await callTool({ tool: 'fx-exec-crash', arguments: { tag } }).expect(200);
      expect(crash.body).toMatchObject({ status: 'failed', error: { code: 'tool_error', message: 'The tool failed unexpectedly.' } });
      expect(JSON.stringify(crash.body)).not.toContain('hunter2');
      const slow = await callTool({ tool: 'fx-exec-slow', arguments: { tag, ms: 60_000 } }).expect(200);
      expect(slow.body).toMatchObject({ status: 'failed', error: { code: 'timeout', message: `The tool did not finish within ${TIMEOUT_MS} ms.` } });
      const quick = await callTool({ tool: 'fx-exec-slow', arguments: { tag, ms: 5 } }).expect(200);
      expect(quick.body).toMatchObject({ status: 'succeeded', result: { waited: 5 } });
      expect((await eventsOf(org, 'tool_call.failed')).find((e) => e.target.id === slow.body.id)!.data).toMatchObject({ error: { code: 'timeout' } });
    });

    it('202: holds mutating, destructive, interruptBefore and spec-required tools for approval; nothing runs', async () => {
      const tag = randomUUID();
      const expected = {
        'fx-exec-write': 'side_effecting',
        'fx-exec-delete': 'side_effecting',
        'fx-exec-confirm': 'interrupt_before',
        'fx-exec-fail': 'spec_required',
        'fx-exec-crm-update': 'side_effecting',
      };
      for (const [tool, reason] of Object.entries(expected)) {
        const res = await callTool({ tool, arguments: { tag } }).expect(202);
        expect(res.body).toMatchObject({ status: 'pending_approval', approvalId: expect.any(String), tool, arguments: { tag, count: 1 } });
        expect(res.body.result).toBeUndefined();
        const approval = await t.http
          .get(`/api/v1/approvals/${res.body.approvalId}`)
          .set(...as(org, 'approver'))
          .expect(200);
        expect(approval.body).toMatchObject({
          status: 'pending',
          reason,
          toolCallId: res.body.id,
          argumentsHash: res.body.argumentsHash,
          requestedBy: org.keyIds.agent,
        });
      }
      expect(runsTagged(tag)).toEqual([]);
    });

    it('404 unknown_tool: a name the version does not offer (an overridden tool answers to its new name only)', async () => {
      for (const tool of ['nope', 'fx-exec-read', 'fx-exec-drifting']) {
        const res = await callTool({ tool, arguments: {} }).expect(404);
        expect(res.body.code).toBe('unknown_tool');
      }
      const denied = await eventsOf(org, 'tool_call.denied');
      expect(denied.find((e) => e.data.tool === 'nope')).toMatchObject({ actor: { id: org.keyIds.agent }, data: { code: 'unknown_tool' } });
    });

    it("404 not_found for another organization's agent or an unknown one; 409 not_published", async () => {
      const other = await createOrg(t, [FX_EXEC_SCOPE]);
      expect((await callTool({ tool: 'search_records', arguments: { query: 'x' } }, other).expect(404)).body.code).toBe('not_found');
      await callTool({ tool: 'search_records', arguments: { query: 'x' } }, org, randomUUID()).expect(404);
      await callTool({ tool: 'search_records', arguments: { query: 'x' } }, org, 'not-a-uuid').expect(404);
      const draft = await t.http
        .post('/api/v1/agents')
        .set(...as(org, 'builder'))
        .send({ slug: `draft-${++slugs}`, name: 'Draft only' })
        .expect(201);
      expect((await callTool({ tool: 'x', arguments: {} }, org, draft.body.id).expect(409)).body.code).toBe('not_published');
    });

    it('409 tool_definition_changed when the code changed the tool since publish; nothing runs', async () => {
      const drifting = await publishedAgent(org, { instructions: '', capabilities: [{ id: 'fx-exec-drift' }] });
      const tag = randomUUID();
      await callTool({ tool: 'fx-exec-drifting', arguments: { tag } }, org, drifting).expect(200);
      const original = DRIFTING_TOOL.description;
      DRIFTING_TOOL.description = 'Release two.';
      try {
        const res = await callTool({ tool: 'fx-exec-drifting', arguments: { tag } }, org, drifting).expect(409);
        expect(res.body.code).toBe('tool_definition_changed');
        // Publishing again pins the new definition, and the tool runs again.
        await t.http
          .post(`/api/v1/agents/${drifting}/publish`)
          .set(...as(org, 'builder'))
          .expect(201);
        await callTool({ tool: 'fx-exec-drifting', arguments: { tag } }, org, drifting).expect(200);
        await callTool({ tool: 'fx-exec-drifting', arguments: { tag }, version: 1 }, org, drifting).expect(409);
      } finally {
        DRIFTING_TOOL.description = original;
      }
      expect(runsTagged(tag)).toHaveLength(2);
    });

    it('422 invalid_arguments with one errors[] entry per field; nothing runs', async () => {
      const res = await callTool({ tool: 'search_records', arguments: { query: '', limit: 'ten', extra: 1 } }).expect(422);
      expect(res.body).toMatchObject({ status: 422, code: 'invalid_arguments' });
      expect([...new Set(res.body.errors.map((e: { path: string }) => e.path))].sort()).toEqual(['arguments.extra', 'arguments.limit', 'arguments.query']);
      const missing = await callTool({ tool: 'fx-exec-write', arguments: {} }).expect(422);
      expect(missing.body.errors.map((e: { path: string }) => e.path)).toContain('arguments.tag');
    });

    it('403 scope_not_granted when the organization lost a scope the capability needs; other tools still run', async () => {
      const o = await createOrg(t, [FX_EXEC_SCOPE]);
      const agent = await publishedAgent(o, { instructions: '', capabilities: [{ id: 'fx-exec-crm' }, { id: 'fx-exec-tools' }] });
      await callTool({ tool: 'fx-exec-crm-lookup', arguments: { query: 'acme' } }, o, agent).expect(200);
      await t.http
        .put(`/api/v1/orgs/${o.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [] })
        .expect(200);
      const res = await callTool({ tool: 'fx-exec-crm-lookup', arguments: { query: 'acme' } }, o, agent).expect(403);
      expect(res.body).toMatchObject({ code: 'scope_not_granted', missingScopes: [FX_EXEC_SCOPE] });
      await callTool({ tool: 'fx-exec-read', arguments: { query: 'acme' } }, o, agent).expect(200);
      expect((await eventsOf(o, 'tool_call.denied'))[0]).toMatchObject({
        actor: { id: o.keyIds.agent },
        target: { id: agent },
        data: { code: 'scope_not_granted', tool: 'fx-exec-crm-lookup', entryPoint: 'rest', argumentsHash: canonicalHash({ query: 'acme', limit: 5 }) },
      });
    });

    it('429 budget_exceeded once a run reaches the limit a capability contributes', async () => {
      const agent = await publishedAgent(org, {
        instructions: '',
        capabilities: [{ id: 'fx-exec-budget', config: { maxToolCallsPerRun: 2 } }, { id: 'fx-exec-tools' }],
      });
      const runId = `run-${randomUUID()}`;
      await callTool({ tool: 'fx-exec-read', arguments: { query: 'a' }, runId }, org, agent).expect(200);
      await callTool({ tool: 'fx-exec-write', arguments: { tag: 'b' }, runId }, org, agent).expect(202);
      const res = await callTool({ tool: 'fx-exec-read', arguments: { query: 'c' }, runId }, org, agent).expect(429);
      expect(res.body).toMatchObject({ code: 'budget_exceeded', limit: 2 });
      await callTool({ tool: 'fx-exec-read', arguments: { query: 'c' }, runId: `run-${randomUUID()}` }, org, agent).expect(200);
    });

    it('cuts a result over maxOutputTokens; with offloadLargeResults keeps the whole one at resultRef', async () => {
      const tag = randomUUID();
      const cut = await callTool({ tool: 'fx-exec-huge', arguments: { tag } }).expect(200);
      expect(cut.body).toMatchObject({ status: 'succeeded', resultTruncated: true });
      expect(JSON.stringify(HUGE_ROWS).startsWith(cut.body.result)).toBe(true);
      expect(cut.body.resultRef).toBeUndefined();
      const none = await t.http
        .get(`/api/v1/tool-calls/${cut.body.id}/result`)
        .set(...as(org, 'agent'))
        .expect(404);
      expect(none.body.code).toBe('result_not_available');

      const off = await callTool({ tool: 'fx-exec-offload', arguments: { tag } }).expect(200);
      expect(off.body).toMatchObject({ resultTruncated: true, resultRef: `/api/v1/tool-calls/${off.body.id}/result` });
      const whole = await t.http
        .get(off.body.resultRef)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(whole.body).toEqual({ toolCallId: off.body.id, result: { rows: HUGE_ROWS } });

      const small = await callTool({ tool: 'search_records', arguments: { query: 'q' } }).expect(200);
      expect(
        (
          await t.http
            .get(`/api/v1/tool-calls/${small.body.id}/result`)
            .set(...as(org, 'agent'))
            .expect(200)
        ).body.result,
      ).toEqual(small.body.result);
      const pending = await callTool({ tool: 'fx-exec-write', arguments: { tag } }).expect(202);
      await t.http
        .get(`/api/v1/tool-calls/${pending.body.id}/result`)
        .set(...as(org, 'agent'))
        .expect(404);
    });

    it('runs an explicit version, and refuses bad bodies with 400 invalid_request naming each field', async () => {
      await callTool({ tool: 'search_records', arguments: { query: 'x' }, version: 1 }).expect(200);
      await callTool({ tool: 'search_records', arguments: { query: 'x' }, version: 'latest' }).expect(200);
      expect((await callTool({ tool: 'search_records', arguments: { query: 'x' }, version: 9 }).expect(404)).body.code).toBe('not_found');
      // The guard reads the agent with the key before the body is validated: no version it is
      // handed (past the integer range, not a number, a body that is no object) reaches the database as one.
      for (const version of [2147483648, 1e300, -1, 1.5, '1']) {
        const refused = await callTool({ tool: 'search_records', arguments: { query: 'x' }, version }).expect(400);
        expect(refused.body.errors.map((e: { path: string }) => e.path)).toEqual(['version']);
      }
      expect((await callTool([{ version: 1 }] as unknown as object).expect(400)).body.code).toBe('invalid_request');
      const res = await callTool({ arguments: 'x', version: 0, runId: '', extra: true }).expect(400);
      expect(res.body.code).toBe('invalid_request');
      expect([...new Set(res.body.errors.map((e: { path: string }) => e.path))].sort()).toEqual(['arguments', 'extra', 'runId', 'tool', 'version']);
      const header = await t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as(org, 'agent'))
        .set('Idempotency-Key', 'x'.repeat(256))
        .send({ tool: 'search_records', arguments: {} })
        .expect(400);
      expect(header.body.errors[0].path).toBe('Idempotency-Key');
    });

    it('403 forbidden for roles other than agent (admin included by its role)', async () => {
      for (const role of ['viewer', 'builder', 'approver'] as const) {
        expect((await callTool({ tool: 'search_records', arguments: { query: 'x' } }, org, agentId, org.keys[role]).expect(403)).body.code).toBe('forbidden');
      }
      await callTool({ tool: 'search_records', arguments: { query: 'x' } }, org, agentId, org.keys.admin).expect(200);
      await callTool({ tool: 'search_records', arguments: { query: 'x' } }, org, agentId, t.adminToken).expect(403);
    });
  });

  describe('Idempotency-Key', () => {
    const withKey = (key: string, body: object) =>
      t.http
        .post(`/api/v1/agents/${agentId}/tool-calls`)
        .set(...as(org, 'agent'))
        .set('Idempotency-Key', key)
        .send(body);

    it('replays the first answer (status and body) and runs nothing; another body is 422 idempotency_key_reused', async () => {
      const key = randomUUID();
      const tag = randomUUID();
      const first = await withKey(key, { tool: 'fx-exec-write', arguments: { tag } }).expect(202);
      const again = await withKey(key, { arguments: { tag }, tool: 'fx-exec-write' }).expect(202);
      expect(again.body).toEqual(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
      const other = await withKey(key, { tool: 'fx-exec-write', arguments: { tag: 'else' } }).expect(422);
      expect(other.body.code).toBe('idempotency_key_reused');

      const readKey = randomUUID();
      const ran = await withKey(readKey, { tool: 'search_records', arguments: { query: tag } }).expect(200);
      await withKey(readKey, { tool: 'search_records', arguments: { query: tag } })
        .expect(200)
        .expect((r) => expect(r.body).toEqual(ran.body));
      expect(fixtureRuns.filter((r) => r.args.query === tag)).toHaveLength(1);
    });

    it('409 idempotency_in_progress while the first request runs', async () => {
      // The held call times out after TIMEOUT_MS: on a loaded machine the second request may come
      // after that, and is then (rightly) the first's answer again. Such a round is tried again.
      for (let round = 1; ; round++) {
        const key = randomUUID();
        const tag = randomUUID();
        const release = holdSlowCall(tag);
        const slow = withKey(key, { tool: 'fx-exec-slow', arguments: { tag, ms: 250 } }).then((r) => r);
        while (runsTagged(tag).length === 0) await new Promise((r) => setTimeout(r, 5));
        const busy = await withKey(key, { tool: 'fx-exec-slow', arguments: { tag, ms: 250 } });
        if (busy.status === 200 && round < 5) {
          expect({ replayed: busy.headers['idempotent-replayed'], code: busy.body.error?.code }).toEqual({ replayed: 'true', code: 'timeout' });
          release();
          await slow;
          continue;
        }
        expect({ status: busy.status, code: busy.body.code }).toEqual({ status: 409, code: 'idempotency_in_progress' });
        release();
        expect((await slow).status).toBe(200);
        await withKey(key, { tool: 'fx-exec-slow', arguments: { tag, ms: 250 } }).expect(200);
        expect(runsTagged(tag)).toHaveLength(1);
        return;
      }
    });

    it('takes any key of 1..255 printable characters, spaces inside included', async () => {
      // A key with a space was refused 400; API.md allows 1..255 characters.
      for (const key of [`order 42 / ${randomUUID()}`, randomUUID() + 'k'.repeat(219)]) {
        const first = await withKey(key, { tool: 'search_records', arguments: { query: 'spaced' } }).expect(200);
        const again = await withKey(key, { tool: 'search_records', arguments: { query: 'spaced' } }).expect(200);
        expect(again.body.id).toBe(first.body.id);
      }
      const tooLong = await withKey('k'.repeat(256), { tool: 'search_records', arguments: { query: 'x' } }).expect(400);
      expect(tooLong.body.errors[0]).toMatchObject({ path: 'Idempotency-Key' });
    });

    it('is scoped to the organization', async () => {
      const other = await createOrg(t);
      const otherAgent = await publishedAgent(other, { instructions: '', capabilities: [{ id: 'fx-exec-tools' }] });
      const key = randomUUID();
      await withKey(key, { tool: 'search_records', arguments: { query: 'a' } }).expect(200);
      await t.http
        .post(`/api/v1/agents/${otherAgent}/tool-calls`)
        .set(...as(other, 'agent'))
        .set('Idempotency-Key', key)
        .send({ tool: 'fx-exec-read', arguments: { query: 'b' } })
        .expect(200);
    });

    it('50 simultaneous requests with one key create exactly one call', async () => {
      const key = randomUUID();
      const tag = randomUUID();
      const responses = await Promise.all(Array.from({ length: 50 }, () => withKey(key, { tool: 'fx-exec-write', arguments: { tag } })));
      const statuses = responses.map((r) => r.status);
      expect(statuses.every((s) => s === 202 || s === 409)).toBe(true);
      const ids = new Set(responses.filter((r) => r.status === 202).map((r) => r.body.id));
      expect(ids.size).toBe(1);
      const [row] = await ds.query(`SELECT count(*)::int AS n FROM tool_call WHERE org_id = $1 AND arguments->>'tag' = $2`, [org.id, tag]);
      expect(row.n).toBe(1);
      expect(responses.filter((r) => r.status === 409).every((r) => r.body.code === 'idempotency_in_progress')).toBe(true);
    });
  });

  describe('approvals', () => {
    const approve = (id: string, body: object = {}, token = org.keys.approver) =>
      t.http
        .post(`/api/v1/approvals/${id}/approve`)
        .set(...bearer(token))
        .send(body);
    const reject = (id: string, body: object, token = org.keys.approver) =>
      t.http
        .post(`/api/v1/approvals/${id}/reject`)
        .set(...bearer(token))
        .send(body);
    const pending = async (tool = 'fx-exec-write', args: object = { tag: randomUUID() }) => (await callTool({ tool, arguments: args }).expect(202)).body;

    it('200: runs exactly the stored arguments, once; a second decision is 409 approval_already_decided', async () => {
      const tag = randomUUID();
      const call = await pending('fx-exec-write', { tag, count: 2 });
      const res = await approve(call.approvalId, { note: 'ok' }).expect(200);
      expect(res.body.approval).toMatchObject({
        id: call.approvalId,
        status: 'approved',
        decidedBy: org.keyIds.approver,
        note: 'ok',
        decidedAt: expect.any(String),
      });
      expect(res.body.toolCall).toMatchObject({
        id: call.id,
        status: 'succeeded',
        result: { written: tag, count: 2 },
        argumentsEdited: false,
        approvalId: call.approvalId,
      });
      expect(runsTagged(tag).map((r) => r.args)).toEqual([{ tag, count: 2 }]);
      expect((await approve(call.approvalId).expect(409)).body.code).toBe('approval_already_decided');
      expect((await reject(call.approvalId, { reason: 'late' }).expect(409)).body.code).toBe('approval_already_decided');
      expect(runsTagged(tag)).toHaveLength(1);
      const approved = (await eventsOf(org, 'approval.approved')).find((e) => e.target.id === call.approvalId)!;
      expect(approved).toMatchObject({ actor: { id: org.keyIds.approver }, data: { toolCallId: call.id, argumentsHash: call.argumentsHash } });
    });

    it("runs the approver's edited arguments, validated like the model's, kept beside the originals", async () => {
      const tag = randomUUID();
      const call = await pending('fx-exec-write', { tag });
      const bad = await approve(call.approvalId, { arguments: { tag: '', colour: 'red' } }).expect(422);
      expect(bad.body.code).toBe('invalid_arguments');
      expect(bad.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['arguments.colour', 'arguments.tag']);
      await t.http
        .get(`/api/v1/approvals/${call.approvalId}`)
        .set(...as(org, 'viewer'))
        .expect(200)
        .expect((r) => expect(r.body.status).toBe('pending'));

      const edited = { tag: `${tag}-edited`, count: 3 };
      const res = await approve(call.approvalId, { arguments: edited }).expect(200);
      expect(res.body.approval).toMatchObject({ arguments: { tag, count: 1 }, approvedArguments: edited, approvedArgumentsHash: canonicalHash(edited) });
      expect(res.body.toolCall).toMatchObject({
        arguments: { tag, count: 1 },
        argumentsEdited: true,
        executedArguments: edited,
        result: { written: edited.tag, count: 3 },
      });
      expect(runsTagged(edited.tag)).toHaveLength(1);
      expect(runsTagged(tag)).toHaveLength(0);
      const event = (await eventsOf(org, 'approval.approved')).find((e) => e.target.id === call.approvalId)!;
      expect(event.data).toMatchObject({ argumentsHash: call.argumentsHash, approvedArgumentsHash: canonicalHash(edited) });
    });

    it('refuses `arguments: null` as a malformed body (400 at arguments): nothing audited, the approval still pending', async () => {
      const call = await pending();
      const res = await approve(call.approvalId, { arguments: null }).expect(400);
      expect(res.body.code).toBe('invalid_request');
      expect(res.body.errors).toEqual([expect.objectContaining({ path: 'arguments' })]);
      expect((await eventsOf(org, 'tool_call.denied')).filter((e) => e.target.id === call.id)).toEqual([]);
      await t.http
        .get(`/api/v1/approvals/${call.approvalId}`)
        .set(...as(org, 'viewer'))
        .expect(200)
        .expect((r) => expect(r.body.status).toBe('pending'));
      expect(runsTagged(call.arguments.tag)).toEqual([]);
    });

    it('does not count arguments sent back unchanged (in another key order) as an edit', async () => {
      const tag = randomUUID();
      const call = await pending('fx-exec-write', { tag, count: 2 });
      const res = await approve(call.approvalId, { arguments: { count: 2, tag } }).expect(200);
      expect(res.body.toolCall).toMatchObject({ status: 'succeeded', argumentsEdited: false, result: { written: tag, count: 2 } });
      expect(res.body.approval.approvedArguments).toBeUndefined();
      expect(res.body.approval.approvedArgumentsHash).toBeUndefined();
      const event = (await eventsOf(org, 'approval.approved')).find((e) => e.target.id === call.approvalId)!;
      expect(event.data).not.toHaveProperty('argumentsEdited');
      expect(event.data).not.toHaveProperty('approvedArgumentsHash');
      expect(runsTagged(tag)).toHaveLength(1);
    });

    it('rejects with a reason (required); the call becomes rejected and nothing runs', async () => {
      const call = await pending();
      expect((await reject(call.approvalId, {}).expect(400)).body.errors[0].path).toBe('reason');
      const res = await reject(call.approvalId, { reason: 'Not this customer.' }).expect(200);
      expect(res.body.approval).toMatchObject({ status: 'rejected', note: 'Not this customer.' });
      expect(res.body.toolCall).toMatchObject({ status: 'rejected', error: { code: 'approval_rejected', message: 'Not this customer.' } });
      expect((await approve(call.approvalId).expect(409)).body.code).toBe('approval_already_decided');
      expect(runsTagged(call.arguments.tag)).toEqual([]);
    });

    it('409 approval_expired past expiresAt; reads, lists and filters as expired', async () => {
      const call = await pending();
      await ds.query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [call.approvalId]);
      await ds.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, [call.id]);
      expect(
        (
          await t.http
            .get(`/api/v1/approvals/${call.approvalId}`)
            .set(...as(org, 'approver'))
            .expect(200)
        ).body.status,
      ).toBe('expired');
      const expired = await t.http
        .get('/api/v1/approvals?status=expired')
        .set(...as(org, 'approver'))
        .expect(200);
      expect(expired.body.items.map((a: { id: string }) => a.id)).toContain(call.approvalId);
      const stillPending = await t.http
        .get('/api/v1/approvals?status=pending&limit=200')
        .set(...as(org, 'approver'))
        .expect(200);
      expect(stillPending.body.items.map((a: { id: string }) => a.id)).not.toContain(call.approvalId);
      expect((await approve(call.approvalId).expect(409)).body.code).toBe('approval_expired');
      expect((await reject(call.approvalId, { reason: 'x' }).expect(409)).body.code).toBe('approval_expired');
      expect(
        (
          await t.http
            .get(`/api/v1/tool-calls/${call.id}`)
            .set(...as(org, 'agent'))
            .expect(200)
        ).body,
      ).toMatchObject({ status: 'expired', error: { code: 'approval_expired' } });
      expect((await eventsOf(org, 'approval.expired')).filter((e) => e.target.id === call.approvalId)).toHaveLength(1);
    });

    // Two transactions at once: the embedded database serves one connection.
    (process.env.DATABASE_URL ? it : it.skip)(
      'a decision that commits while another waits past the expiry: the other is told already decided, not "nothing ran"',
      async () => {
        const call = await pending();
        await ds.query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [call.approvalId]);
        await ds.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, [call.id]);
        // Another request's decision, made before the expiry and not yet committed, holds the row.
        const first = new Client({ connectionString: t.db.url });
        await first.connect();
        try {
          await first.query('BEGIN');
          await first.query(`UPDATE approval SET status = 'rejected', decided_at = now(), note = 'first' WHERE id = $1`, [call.approvalId]);
          await first.query(
            `UPDATE tool_call SET status = 'rejected', error_code = 'approval_rejected', error_message = 'first', completed_at = now() WHERE id = $1`,
            [call.id],
          );
          const late = approve(call.approvalId).then((r) => r);
          await new Promise((resolve) => setTimeout(resolve, 300));
          await first.query('COMMIT');
          const res = await late;
          expect([res.status, res.body.code]).toEqual([409, 'approval_already_decided']);
        } finally {
          await first.end();
        }
        expect((await eventsOf(org, 'approval.expired')).filter((e) => e.target.id === call.approvalId)).toEqual([]);
        expect(
          (
            await t.http
              .get(`/api/v1/approvals/${call.approvalId}`)
              .set(...as(org, 'viewer'))
              .expect(200)
          ).body.status,
        ).toBe('rejected');
      },
    );

    it('403 self_approval_forbidden for the key that requested the call', async () => {
      const both = await extraKey(org, ['agent', 'approver']);
      const call = (await callTool({ tool: 'fx-exec-delete', arguments: { tag: randomUUID() } }, org, agentId, both).expect(202)).body;
      expect((await approve(call.approvalId, {}, both).expect(403)).body.code).toBe('self_approval_forbidden');
      expect((await reject(call.approvalId, { reason: 'mine' }, both).expect(403)).body.code).toBe('self_approval_forbidden');
      await approve(call.approvalId).expect(200);
    });

    it("checks the organization's scopes again when the approved call runs", async () => {
      const o = await createOrg(t, [FX_EXEC_SCOPE]);
      const agent = await publishedAgent(o, { instructions: '', capabilities: [{ id: 'fx-exec-crm' }] });
      const tag = randomUUID();
      const call = (await callTool({ tool: 'fx-exec-crm-update', arguments: { tag } }, o, agent).expect(202)).body;
      await t.http
        .put(`/api/v1/orgs/${o.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [] })
        .expect(200);
      expect((await approve(call.approvalId, {}, o.keys.approver).expect(403)).body.code).toBe('scope_not_granted');
      expect(
        (
          await t.http
            .get(`/api/v1/approvals/${call.approvalId}`)
            .set(...as(o, 'approver'))
            .expect(200)
        ).body.status,
      ).toBe('pending');
      await t.http
        .put(`/api/v1/orgs/${o.id}/scopes`)
        .set(...bearer(t.adminToken))
        .send({ scopes: [FX_EXEC_SCOPE] })
        .expect(200);
      await approve(call.approvalId, {}, o.keys.approver).expect(200);
      expect(runsTagged(tag)).toHaveLength(1);
    });

    it('refuses roles: only approvers decide; agents do not read approvals; other organizations see 404', async () => {
      const call = await pending();
      for (const role of ['viewer', 'builder', 'agent'] as const) {
        expect((await approve(call.approvalId, {}, org.keys[role]).expect(403)).body.code).toBe('forbidden');
        await reject(call.approvalId, { reason: 'x' }, org.keys[role]).expect(403);
      }
      await t.http
        .get('/api/v1/approvals')
        .set(...as(org, 'agent'))
        .expect(403);
      const other = await createOrg(t);
      await t.http
        .get(`/api/v1/approvals/${call.approvalId}`)
        .set(...as(other, 'approver'))
        .expect(404);
      expect((await approve(call.approvalId, {}, other.keys.approver).expect(404)).body.code).toBe('not_found');
      await approve(randomUUID()).expect(404);
      await approve('nope').expect(404);
    });

    it('of 50 simultaneous approvals exactly one answers 200 and the tool runs once', async () => {
      const tag = randomUUID();
      const call = await pending('fx-exec-delete', { tag });
      const approvers = await Promise.all(Array.from({ length: 5 }, () => extraKey(org, ['approver'])));
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => approve(call.approvalId, {}, approvers[i % approvers.length])));
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
      expect(responses.filter((r) => r.status === 409).every((r) => r.body.code === 'approval_already_decided')).toBe(true);
      expect(responses.filter((r) => r.status === 409)).toHaveLength(49);
      expect(runsTagged(tag)).toHaveLength(1);
      expect((await eventsOf(org, 'approval.approved')).filter((e) => e.target.id === call.approvalId)).toHaveLength(1);
    });
  });

  describe('the races themselves, without the HTTP layer in between', () => {
    // Over HTTP most losers are already turned away by the first read; here all 50 reach the
    // conditional statements at once (on PostgreSQL, on 10 connections).
    it('one conditional UPDATE decides an approval: of 50 simultaneous decisions one wins', async () => {
      const call = (await callTool({ tool: 'fx-exec-write', arguments: { tag: randomUUID() } }).expect(202)).body;
      const store = t.app.get(ApprovalsRepository);
      const { row } = (await store.findDecidable(org.id, call.approvalId))!;
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          store.decide(
            row,
            { decidedBy: org.keyIds.approver, decidedAt: new Date(), note: `${i}`, outcome: i % 2 ? 'approved' : 'rejected', leaseMs: 60_000 },
            [
              {
                type: i % 2 ? 'approval.approved' : 'approval.rejected',
                orgId: org.id,
                actor: { type: 'api_key', id: org.keyIds.approver },
                target: { type: 'approval', id: call.approvalId },
              },
            ],
          ),
        ),
      );
      expect(results.filter((r) => r.won)).toHaveLength(1);
      expect(results.filter((r) => !r.won && r.why === 'decided')).toHaveLength(49);
      // The decision's events are part of its statement: the losers wrote none.
      const decided = [...(await eventsOf(org, 'approval.approved')), ...(await eventsOf(org, 'approval.rejected'))];
      expect(decided.filter((e) => e.target.id === call.approvalId)).toHaveLength(1);
    });

    it('one INSERT ... ON CONFLICT claims a key: of 50 simultaneous claims one wins', async () => {
      const idempotency = t.app.get(IdempotencyRepository);
      const key = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 50 }, () => idempotency.claim(org.id, agentId, key, 'same-body', 60_000).catch((e: { code: string }) => e.code)),
      );
      expect(results.filter((r) => typeof r === 'object' && r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r === 'idempotency_in_progress')).toHaveLength(49);
    });
  });

  describe('a side effect never runs without approval (property over random specs and arguments)', () => {
    const SIDE_EFFECTING = ['fx-exec-write', 'fx-exec-delete', 'fx-exec-crm-update'];
    const READ_ONLY = ['fx-exec-read', 'fx-exec-confirm', 'fx-exec-fail', 'fx-exec-crash', 'fx-exec-huge', 'fx-exec-crm-lookup'];

    it('holds for any toolApproval, overrides, tool and arguments', async () => {
      const o = await createOrg(t, [FX_EXEC_SCOPE]);
      await fc.assert(
        fc.asyncProperty(
          fc.subarray(READ_ONLY),
          fc.subarray([...SIDE_EFFECTING, ...READ_ONLY]),
          fc.constantFrom(...SIDE_EFFECTING, ...READ_ONLY),
          fc.oneof(
            fc.record({ tag: fc.string({ minLength: 1, maxLength: 20 }), count: fc.integer({ min: -5, max: 200 }) }, { requiredKeys: [] }),
            fc.dictionary(fc.string(), fc.jsonValue()),
          ),
          async (required, renamed, target, args) => {
            const tag = randomUUID();
            const toolOverrides = Object.fromEntries(renamed.map((id, i) => [id, { name: `renamed_${i}` }]));
            const agent = await publishedAgent(o, {
              instructions: '',
              capabilities: [{ id: 'fx-exec-tools' }, { id: 'fx-exec-crm' }],
              toolApproval: Object.fromEntries(required.map((id) => [id, 'required'])),
              toolOverrides,
            });
            const name = toolOverrides[target]?.name ?? target;
            const res = await callTool({ tool: name, arguments: { ...args, tag } }, o, agent);
            if (SIDE_EFFECTING.includes(target) || required.includes(target) || target === 'fx-exec-confirm') {
              expect([202, 422]).toContain(res.status);
              expect(runsTagged(tag)).toEqual([]);
            }
          },
        ),
        { numRuns: 15 },
      );
    });
  });

  describe('reads', () => {
    it('lists tool calls newest first with filters and cursor pages, within the organization', async () => {
      const o = await createOrg(t, [FX_EXEC_SCOPE]);
      const a = await publishedAgent(o, { instructions: '', capabilities: [{ id: 'fx-exec-tools' }] });
      const b = await publishedAgent(o, { instructions: '', capabilities: [{ id: 'fx-exec-tools' }] });
      const made: string[] = [];
      for (let i = 0; i < 3; i++) made.push((await callTool({ tool: 'fx-exec-read', arguments: { query: `${i}` }, runId: 'r-a' }, o, a).expect(200)).body.id);
      made.push((await callTool({ tool: 'fx-exec-write', arguments: { tag: 'w' } }, o, b).expect(202)).body.id);

      const all = await t.http
        .get('/api/v1/tool-calls?limit=2')
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(all.body.items.map((c: { id: string }) => c.id)).toEqual([made[3], made[2]]);
      const next = await t.http
        .get(`/api/v1/tool-calls?limit=2&cursor=${all.body.nextCursor}`)
        .set(...as(o, 'agent'))
        .expect(200);
      expect(next.body.items.map((c: { id: string }) => c.id)).toEqual([made[1], made[0]]);
      expect(next.body.nextCursor).toBeNull();
      const byAgent = await t.http
        .get(`/api/v1/tool-calls?agentId=${b}`)
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(byAgent.body.items.map((c: { id: string }) => c.id)).toEqual([made[3]]);
      const byStatus = await t.http
        .get('/api/v1/tool-calls?status=pending_approval')
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(byStatus.body.items.map((c: { id: string }) => c.id)).toEqual([made[3]]);
      const byRun = await t.http
        .get(`/api/v1/tool-calls?runId=r-a&agentId=${a}&status=succeeded`)
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(byRun.body.items).toHaveLength(3);
      await t.http
        .get('/api/v1/tool-calls?status=done')
        .set(...as(o, 'viewer'))
        .expect(400);
      await t.http
        .get('/api/v1/tool-calls?agentId=x')
        .set(...as(o, 'viewer'))
        .expect(400);

      expect(
        (
          await t.http
            .get(`/api/v1/tool-calls/${made[0]}`)
            .set(...as(org, 'viewer'))
            .expect(404)
        ).body.code,
      ).toBe('not_found');
      const foreign = await t.http
        .get('/api/v1/tool-calls?limit=200')
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(foreign.body.items.some((c: { id: string }) => made.includes(c.id))).toBe(false);
      await t.http
        .get(`/api/v1/tool-calls/${made[0]}`)
        .set(...as(o, 'builder'))
        .expect(200);
      await t.http
        .get('/api/v1/tool-calls')
        .set(...bearer(t.adminToken))
        .expect(403);
    });

    it('lists approvals by status', async () => {
      const o = await createOrg(t);
      const a = await publishedAgent(o, { instructions: '', capabilities: [{ id: 'fx-exec-tools' }] });
      const first = (await callTool({ tool: 'fx-exec-write', arguments: { tag: '1' } }, o, a).expect(202)).body;
      const second = (await callTool({ tool: 'fx-exec-delete', arguments: { tag: '2' } }, o, a).expect(202)).body;
      await t.http
        .post(`/api/v1/approvals/${first.approvalId}/reject`)
        .set(...as(o, 'approver'))
        .send({ reason: 'no' })
        .expect(200);
      const list = await t.http
        .get('/api/v1/approvals')
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(list.body.items.map((x: { id: string }) => x.id)).toEqual([second.approvalId, first.approvalId]);
      expect(list.body.items[0]).toMatchObject({
        toolCallId: second.id,
        agentId: a,
        version: 1,
        tool: 'fx-exec-delete',
        capabilityId: 'fx-exec-tools',
        toolId: 'fx-exec-delete',
        arguments: { tag: '2', count: 1 },
        reason: 'side_effecting',
        expiresAt: expect.any(String),
      });
      const rejected = await t.http
        .get('/api/v1/approvals?status=rejected')
        .set(...as(o, 'approver'))
        .expect(200);
      expect(rejected.body.items.map((x: { id: string }) => x.id)).toEqual([first.approvalId]);
      const page = await t.http
        .get('/api/v1/approvals?limit=1')
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(page.body.items).toHaveLength(1);
      const rest = await t.http
        .get(`/api/v1/approvals?limit=1&cursor=${page.body.nextCursor}`)
        .set(...as(o, 'viewer'))
        .expect(200);
      expect(rest.body.items[0].id).toBe(first.approvalId);
    });
  });

  describe('the sweeper', () => {
    it('marks a call left running past its lease failed/interrupted and never runs it again', async () => {
      const tag = randomUUID();
      const call = (await callTool({ tool: 'fx-exec-write', arguments: { tag } }).expect(202)).body;
      // A process that approved the call and died mid-run leaves exactly this behind.
      await ds.query(`UPDATE approval SET status = 'approved', decided_by = $2, decided_at = now() WHERE id = $1`, [call.approvalId, org.keyIds.approver]);
      await ds.query(`UPDATE tool_call SET status = 'running', started_at = now(), lease_expires_at = now() - interval '1 second' WHERE id = $1`, [call.id]);
      const report = await t.app.get(ToolCallSweeper).sweepOnce();
      expect(report.interrupted).toBe(1);
      const read = await t.http
        .get(`/api/v1/tool-calls/${call.id}`)
        .set(...as(org, 'viewer'))
        .expect(200);
      expect(read.body).toMatchObject({ status: 'failed', error: { code: 'interrupted' }, completedAt: expect.any(String) });
      expect((await eventsOf(org, 'tool_call.failed')).find((e) => e.target.id === call.id)).toMatchObject({
        actor: { id: 'tool-call-sweeper' },
        data: { error: { code: 'interrupted' } },
      });
      expect(runsTagged(tag)).toEqual([]);
      expect((await approve(call.approvalId)).status).toBe(409);
    });

    const approve = (id: string) =>
      t.http
        .post(`/api/v1/approvals/${id}/approve`)
        .set(...as(org, 'approver'))
        .send({});
  });

  it('documents the routes in OpenAPI', async () => {
    const doc = (await t.http.get('/api/docs-json').expect(200)).body;
    expect(Object.keys(doc.paths['/api/v1/agents/{agentId}/tool-calls'].post.responses).sort()).toEqual(
      expect.arrayContaining(['200', '202', '403', '404', '409', '422', '429']),
    );
    expect(doc.paths['/api/v1/approvals/{id}/approve'].post).toBeDefined();
    expect(doc.paths['/api/v1/tool-calls/{id}/result'].get).toBeDefined();
    expect(doc.components.schemas.ToolCallView.properties.status.enum).toContain('pending_approval');
  });
});
