import { Test } from '@nestjs/testing';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../test/support/test-database';
import { testConfig } from '../../test/support/test-app';
import type { BuiltVersion, VersionTool } from '../agents/built-version';
import { VersionBuilder } from '../agents/version-builder.service';
import { AuditModule } from '../audit/audit.module';
import type { ApiKeyPrincipal, RequestContext } from '../auth/principal';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import { StampedContribution, ToolContext, ToolError, ToolRisk } from '../capabilities/capability.types';
import { ApiError, FieldError } from '../common/api-error';
import { APP_CONFIG } from '../config/app-config';
import { dataSourceOptions } from '../database/data-source-options';
import { canonicalHash } from '../agents/digests';
import { CallSettledNotifier } from './call-settled.notifier';
import { IdempotencyRepository } from '../tool-calls/idempotency.repository';
import { ToolCallSweeper } from '../tool-calls/tool-call-sweeper.service';
import { ApprovalsRepository } from '../tool-calls/approvals.repository';
import { ToolCallMaintenanceRepository } from '../tool-calls/tool-call-maintenance.repository';
import { ToolCallsRepository } from '../tool-calls/tool-calls.repository';
import { ToolCallsService } from '../tool-calls/tool-calls.service';
import { CapabilityToolResolver } from './capability-tool.resolver';
import { DecisionWaiter } from './decision-waiter.service';
import { ToolApprovals } from './tool-approvals.service';
import { ToolCallGuards } from './tool-call-guards';
import { GovernanceRepository } from '../governance/governance.repository';
import { ToolExecutor, ToolCallRequest } from './tool-executor.service';
import { ToolImplementations } from './tool-implementations';
import { McpToolResolver } from './mcp-tool.resolver';
import { approvalReasonOf, ApprovalReason } from './tool-policy';
import { Metrics } from '../telemetry/metrics';
import { RunStorageRepository } from './run-storage.repository';
import { ToolRunner } from './tool-runner.service';

/**
 * The executor with a hand-made BuiltVersion and a stand-in registry, on a real database (the
 * SQL is half of what it does). The HTTP paths are covered by test/tool-calls.e2e-spec.ts.
 */

interface ToolSpec {
  name: string;
  risk?: ToolRisk;
  interruptBefore?: boolean;
  /** What the tool says about itself; the executor asks the tool policy instead. */
  approvalReason?: ApprovalReason | null;
  requiresApproval?: boolean;
  scopes?: string[];
  drifted?: boolean;
  maxOutputTokens?: number;
  offloadLargeResults?: boolean;
  execute?: (args: Record<string, unknown>, ctx: ToolContext) => unknown;
}

const runs: { tool: string; args: unknown; ctx: ToolContext }[] = [];
/** The implementations the stand-in capability "fx-unit" contributes, by tool id. */
const implementations = new Map<string, (args: unknown, ctx: ToolContext) => unknown>();

function runnable(spec: ToolSpec): VersionTool {
  const risk = spec.risk ?? 'read_only';
  const reason =
    spec.approvalReason !== undefined ? spec.approvalReason : risk !== 'read_only' ? 'side_effecting' : spec.interruptBefore ? 'interrupt_before' : null;
  const tool: VersionTool = {
    name: spec.name,
    description: `the ${spec.name} tool`,
    inputSchema: { type: 'object' },
    capabilityId: 'fx-unit',
    toolId: spec.name,
    risk,
    requiresApproval: spec.requiresApproval ?? reason !== null,
    declaration: {
      id: spec.name,
      description: `the ${spec.name} tool`,
      risk,
      input: Object,
      interruptBefore: spec.interruptBefore,
      maxOutputTokens: spec.maxOutputTokens,
      offloadLargeResults: spec.offloadLargeResults,
    },
    scopes: spec.scopes ?? [],
    approvalReason: reason,
    digest: 'd1',
    pinnedDigest: spec.drifted ? 'd0' : 'd1',
  };
  implementations.set(spec.name, (args: unknown, ctx: ToolContext) => {
    runs.push({ tool: spec.name, args, ctx });
    return spec.execute ? spec.execute(args as Record<string, unknown>, ctx) : { echo: args };
  });
  return tool;
}

/** Set: every check answers that the schema cannot be used now, as a vendor's check past its thread's time does. */
let uncheckable: string | undefined;

/** Arguments: `{ q: string, n?: integer = 1 }`, nothing else. */
const registry = {
  get: (id: string) => (id === 'fx-unit' ? {} : undefined),
  validateToolInput(_capabilityId: string, _toolId: string, args: unknown) {
    const errors: FieldError[] = [];
    if (uncheckable) return { value: args as object, plain: args as Record<string, unknown>, errors: [{ path: '', code: 'schema', message: uncheckable }] };
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return { value: {}, plain: {}, errors: [{ path: '', message: 'must be an object' }] };
    }
    const a = args as Record<string, unknown>;
    for (const key of Object.keys(a))
      if (key !== 'q' && key !== 'n') errors.push({ path: key, code: 'unknown_property', message: `property ${key} is not allowed` });
    if (typeof a.q !== 'string') errors.push({ path: 'q', code: 'isString', message: 'q must be a string' });
    if (a.n !== undefined && !Number.isInteger(a.n)) errors.push({ path: 'n', code: 'isInt', message: 'n must be an integer' });
    const plain = { q: a.q, n: a.n ?? 1 } as Record<string, unknown>;
    return { value: { ...plain }, plain, errors };
  },
};

describe('ToolExecutor', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let executor: ToolExecutor;
  let approvals: ToolApprovals;
  let waiter: DecisionWaiter;
  let settledNotifier: CallSettledNotifier;
  let reads: ToolCallsService;
  let sweeper: ToolCallSweeper;
  let close: () => Promise<void>;
  let built: BuiltVersion;
  const orgId = randomUUID();
  const agentId = randomUUID();
  const agentKey: ApiKeyPrincipal = { type: 'api_key', id: randomUUID(), orgId, roles: ['agent'], orgScopes: ['crm:write'] };
  const approverKey: ApiKeyPrincipal = { type: 'api_key', id: randomUUID(), orgId, roles: ['approver'], orgScopes: ['crm:write'] };
  const as = (principal: ApiKeyPrincipal): RequestContext => ({ principal, requestId: 'test' });
  const call = (tool: string, args: unknown, extra: Partial<ToolCallRequest> = {}) =>
    executor.request(as(agentKey), { agentId, tool, arguments: args, entryPoint: 'rest', ...extra });

  beforeAll(async () => {
    db = await createTestDatabase();
    const config = testConfig({ toolTimeoutMs: 200, approvalTtlSeconds: 3600 });
    const moduleRef = await Test.createTestingModule({
      imports: [TypeOrmModule.forRoot({ ...dataSourceOptions(db.url, db.poolSize), entities: [] }), AuditModule],
      providers: [
        ToolExecutor,
        ToolApprovals,
        DecisionWaiter,
        ToolCallGuards,
        GovernanceRepository,
        ToolRunner,
        RunStorageRepository,
        ToolImplementations,
        CapabilityToolResolver,
        // These fixtures offer no MCP catalog tools.
        { provide: McpToolResolver, useValue: { handles: () => false } },
        ToolCallsRepository,
        ApprovalsRepository,
        ToolCallMaintenanceRepository,
        ToolCallsService,
        IdempotencyRepository,
        CallSettledNotifier,
        ToolCallSweeper,
        Metrics,
        { provide: APP_CONFIG, useValue: config },
        {
          provide: VersionBuilder,
          useValue: {
            // Like the composer: what fx-unit contributed goes to the executor's sink, never onto the version.
            build: async (_o: string, _s: string[], _a: string, _v: unknown, sink?: (c: StampedContribution) => void) => {
              sink?.({ capabilityId: 'fx-unit', tools: built.tools.map((t) => ({ id: t.toolId, execute: implementations.get(t.name)! })) });
              return built;
            },
          },
        },
        { provide: CapabilityRegistry, useValue: registry },
      ],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    close = async () => {
      await moduleRef.close();
      await db.drop();
    };
    ds = moduleRef.get(getDataSourceToken());
    executor = moduleRef.get(ToolExecutor);
    approvals = moduleRef.get(ToolApprovals);
    waiter = moduleRef.get(DecisionWaiter);
    settledNotifier = moduleRef.get(CallSettledNotifier);
    reads = moduleRef.get(ToolCallsService);
    sweeper = moduleRef.get(ToolCallSweeper);
    await sweeper.stop();

    await ds.query(`INSERT INTO org (id, slug, name, scopes) VALUES ($1, 'unit', 'Unit', '{crm:write}')`, [orgId]);
    await ds.query(`INSERT INTO agent (id, org_id, slug, name, draft, latest_version) VALUES ($1, $2, 'a', 'A', '{}', 1)`, [agentId, orgId]);
    // A decision holds its key's row (it must not be revoked meanwhile): the keys exist.
    for (const key of [agentKey, approverKey]) {
      await ds.query(`INSERT INTO api_key (id, org_id, name, roles, token_prefix, token_hash) VALUES ($1, $2, $3, $4, 'cpk_', $5)`, [
        key.id,
        orgId,
        key.roles[0],
        key.roles,
        randomUUID(),
      ]);
    }
    await ds.query(
      `INSERT INTO agent_version (org_id, agent_id, version, spec, spec_hash, tool_digests, content_hash, published_by) VALUES ($1, $2, 1, '{}', 'h', '{}', 'c', 'test')`,
      [orgId, agentId],
    );
  });
  afterAll(() => close());

  beforeEach(() => {
    runs.length = 0;
    built = {
      orgId,
      agentId,
      agentName: 'A',
      version: 1,
      specHash: 'h',
      spec: { instructions: '', capabilities: [], toolApproval: { strict: 'required' } },
      systemPrompt: '',
      settings: {},
      limits: {},
      pinnedTools: {},
      tools: [
        runnable({ name: 'read' }),
        runnable({ name: 'write', risk: 'mutating' }),
        runnable({ name: 'drop', risk: 'destructive' }),
        runnable({ name: 'ask', interruptBefore: true }),
        runnable({ name: 'strict', approvalReason: 'spec_required' }),
        runnable({ name: 'scoped', scopes: ['crm:write', 'billing:read'] }),
        runnable({ name: 'changed', drifted: true, scopes: ['billing:read'] }),
        runnable({
          name: 'fails',
          execute: () => {
            throw new ToolError('no_such_order', 'No order 42.');
          },
        }),
        runnable({
          name: 'crashes',
          execute: () => {
            throw new Error('secret internals');
          },
        }),
        runnable({ name: 'slow', execute: (_a, ctx) => new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))) }),
        runnable({ name: 'huge', maxOutputTokens: 10, execute: () => 'word '.repeat(500) }),
        runnable({ name: 'offload', maxOutputTokens: 10, offloadLargeResults: true, execute: () => ({ rows: 'row '.repeat(500) }) }),
      ],
    };
  });

  async function denial(run: () => Promise<unknown>): Promise<ApiError> {
    const before = await deniedCount();
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect(await deniedCount()).toBe(before + 1);
    return err as ApiError;
  }

  async function deniedCount(): Promise<number> {
    const [row] = await ds.query(`SELECT count(*)::int AS n FROM audit_event WHERE org_id = $1 AND type = 'tool_call.denied'`, [orgId]);
    return row.n;
  }

  async function eventsOf(targetId: string): Promise<{ type: string; actor_id: string; data: Record<string, unknown> }[]> {
    return ds.query(`SELECT type, actor_id, data FROM audit_event WHERE target_id = $1 ORDER BY seq`, [targetId]);
  }

  describe('guards, in the order of issue 5', () => {
    it('answers a key pinned to other agents as if the agent were missing, before anything else, and runs nothing', async () => {
      const pinned: ApiKeyPrincipal = { ...agentKey, agentIds: [randomUUID()] };
      // As a missing agent is: refused, not audited as a denial of this agent's tool.
      const denied = await ds.query(`SELECT count(*)::int AS n FROM audit_event WHERE type = 'tool_call.denied'`);
      await expect(executor.request(as(pinned), { agentId, tool: 'read', arguments: { q: 'x' }, entryPoint: 'rest' })).rejects.toMatchObject({
        status: 404,
        code: 'not_found',
      });
      expect(await ds.query(`SELECT count(*)::int AS n FROM audit_event WHERE type = 'tool_call.denied'`)).toEqual(denied);
      expect(runs).toHaveLength(0);
      const ownAgent: ApiKeyPrincipal = { ...agentKey, agentIds: [agentId] };
      const ran = await executor.request(as(ownAgent), { agentId: agentId.toUpperCase(), tool: 'read', arguments: { q: 'x' }, entryPoint: 'rest' });
      expect(ran.call.status).toBe('succeeded');
    });

    it('refuses a tool the version does not offer', async () => {
      const err = await denial(() => call('nope', { q: 'x' }));
      expect([err.status, err.code]).toEqual([404, 'unknown_tool']);
    });

    it('checks the pinned digest before the scopes', async () => {
      const err = await denial(() => call('changed', { q: 'x' }));
      expect([err.status, err.code]).toEqual([409, 'tool_definition_changed']);
      const unpinned = runnable({ name: 'fresh' });
      unpinned.pinnedDigest = undefined;
      built.tools = [...built.tools, unpinned];
      expect((await denial(() => call('fresh', { q: 'x' }))).code).toBe('tool_definition_changed');
    });

    it('checks every scope of the capability, and names the missing ones', async () => {
      const err = await denial(() => call('scoped', { bad: 1 }));
      expect([err.status, err.code, err.extensions]).toEqual([403, 'scope_not_granted', { missingScopes: ['billing:read'] }]);
      expect(runs).toHaveLength(0);
    });

    it('counts calls per run, before validating, and reserves nothing for invalid arguments', async () => {
      built.limits = { maxToolCallsPerRun: 2 };
      const runId = `run-${randomUUID()}`;
      await call('read', { q: 'a' }, { runId });
      const invalid = await denial(() => call('read', { q: 1 }, { runId }));
      expect(invalid.code).toBe('invalid_arguments');
      await call('write', { q: 'b' }, { runId });
      const over = await denial(() => call('read', { q: 'c' }, { runId }));
      expect([over.status, over.code]).toEqual([429, 'budget_exceeded']);
      expect((await denial(() => call('read', { q: 1 }, { runId }))).code).toBe('budget_exceeded');
      // Other runs and calls without a run are not limited by it.
      expect((await call('read', { q: 'd' }, { runId: `run-${randomUUID()}` })).status).toBe(200);
      expect((await call('read', { q: 'e' })).status).toBe(200);
    });

    it('refuses invalid arguments with paths under arguments, and runs nothing', async () => {
      const err = await denial(() => call('write', { q: 5, extra: true }));
      expect([err.status, err.code]).toEqual([422, 'invalid_arguments']);
      expect(err.errors!.map((e) => e.path).sort()).toEqual(['arguments.extra', 'arguments.q']);
      expect((await denial(() => call('read', 'not an object'))).errors).toEqual([{ path: 'arguments', message: 'must be an object' }]);
      expect(runs).toHaveLength(0);
    });

    it('records a denial with its code, tool and actor', async () => {
      await call('nope', {}).catch(() => undefined);
      const [row] = await ds.query(`SELECT actor_id, target_type, target_id, data FROM audit_event WHERE type = 'tool_call.denied' ORDER BY seq DESC LIMIT 1`);
      expect(row).toMatchObject({
        actor_id: agentKey.id,
        target_type: 'agent',
        target_id: agentId,
        data: { code: 'unknown_tool', tool: 'nope', entryPoint: 'rest' },
      });
    });
  });

  describe('running without approval', () => {
    it('runs a read-only tool with its validated arguments and a full context, and persists in one statement', async () => {
      const query = jest.spyOn(ds, 'query');
      const transaction = jest.spyOn(ds, 'transaction');
      const out = await call('read', { q: 'hello' }, { runId: 'r1' });
      // One statement reads the organization's switches (retired version, disabled tool: issue 13), one persists.
      expect(query).toHaveBeenCalledTimes(2);
      expect(String(query.mock.calls[0][0])).toMatch(/agent_version_retirement/);
      expect(transaction).not.toHaveBeenCalled();
      query.mockRestore();
      transaction.mockRestore();

      expect(out.status).toBe(200);
      expect(out.call).toMatchObject({
        status: 'succeeded',
        result: { echo: { q: 'hello', n: 1 } },
        resultTruncated: false,
        arguments: { q: 'hello', n: 1 },
        runId: 'r1',
        entryPoint: 'rest',
      });
      expect(out.call.argumentsHash).toBe(canonicalHash({ n: 1, q: 'hello' }));
      expect(runs[0].ctx).toMatchObject({ orgId, agentId, version: 1, callId: out.call.id, runId: 'r1' });
      expect(await reads.get(orgId, out.call.id)).toEqual(out.call);
      expect((await eventsOf(out.call.id)).map((e) => e.type)).toEqual(['tool_call.requested', 'tool_call.succeeded']);
    });

    it('records a ToolError, a crash and a timeout as failed calls', async () => {
      expect((await call('fails', { q: 'x' })).call).toMatchObject({ status: 'failed', error: { code: 'no_such_order', message: 'No order 42.' } });
      const crashed = await call('crashes', { q: 'x' });
      expect(crashed.call.error).toEqual({ code: 'tool_error', message: 'The tool failed unexpectedly.' });
      const slow = await call('slow', { q: 'x' });
      expect(slow.call.error).toEqual({ code: 'timeout', message: 'The tool did not finish within 200 ms.' });
      expect(runs.find((r) => r.tool === 'slow')!.ctx.signal.aborted).toBe(true);
      expect((await eventsOf(slow.call.id)).map((e) => [e.type, e.data.error])).toEqual([
        ['tool_call.requested', undefined],
        ['tool_call.failed', { code: 'timeout' }],
      ]);
    });

    it('cuts a result to its budget, and keeps the whole one when the tool offloads', async () => {
      const cut = await call('huge', { q: 'x' });
      expect(cut.call).toMatchObject({ status: 'succeeded', resultTruncated: true });
      expect(cut.call.resultRef).toBeUndefined();
      await expect(reads.result(orgId, cut.call.id)).rejects.toMatchObject({ code: 'result_not_available' });

      const off = await call('offload', { q: 'x' });
      expect(off.call).toMatchObject({ resultTruncated: true, resultRef: `/api/v1/tool-calls/${off.call.id}/result` });
      expect(JSON.parse(await reads.result(orgId, off.call.id))).toEqual({ toolCallId: off.call.id, result: { rows: 'row '.repeat(500) } });
    });
  });

  describe('approvals', () => {
    it.each([
      ['write', 'side_effecting'],
      ['drop', 'side_effecting'],
      ['ask', 'interrupt_before'],
      ['strict', 'spec_required'],
    ])('holds %s for approval (%s), bound to the validated arguments, and runs nothing', async (tool, reason) => {
      const out = await call(tool, { q: 'x' });
      expect(out.status).toBe(202);
      expect(out.call).toMatchObject({ status: 'pending_approval', approvalId: expect.any(String) });
      expect(runs).toHaveLength(0);
      const approval = await reads.getApproval(orgId, out.call.approvalId!);
      expect(approval).toMatchObject({
        status: 'pending',
        reason,
        toolCallId: out.call.id,
        arguments: { q: 'x', n: 1 },
        argumentsHash: canonicalHash({ q: 'x', n: 1 }),
        requestedBy: agentKey.id,
      });
      expect((await eventsOf(out.call.id)).map((e) => e.type)).toEqual(['tool_call.requested']);
      expect((await eventsOf(approval.id)).map((e) => e.type)).toEqual(['approval.requested']);
    });

    it('runs the stored arguments once when approved, and refuses a second decision', async () => {
      const out = await call('write', { q: 'x' });
      const decided = await approvals.approve(as(approverKey), out.call.approvalId!, { note: 'fine' });
      expect(decided.approval).toMatchObject({ status: 'approved', decidedBy: approverKey.id, note: 'fine' });
      expect(decided.toolCall).toMatchObject({ status: 'succeeded', result: { echo: { q: 'x', n: 1 } }, argumentsEdited: false });
      expect(runs.map((r) => r.tool)).toEqual(['write']);
      await expect(approvals.approve(as(approverKey), out.call.approvalId!, {})).rejects.toMatchObject({ status: 409, code: 'approval_already_decided' });
      await expect(approvals.reject(as(approverKey), out.call.approvalId!, 'no')).rejects.toMatchObject({ code: 'approval_already_decided' });
      expect(runs).toHaveLength(1);
      expect((await eventsOf(out.call.id)).map((e) => [e.type, e.actor_id])).toEqual([
        ['tool_call.requested', agentKey.id],
        ['tool_call.succeeded', approverKey.id],
      ]);
    });

    it('forbids the requesting key to decide', async () => {
      const out = await call('write', { q: 'x' });
      const both: ApiKeyPrincipal = { ...agentKey, roles: ['agent', 'approver'] };
      await expect(approvals.approve(as(both), out.call.approvalId!, {})).rejects.toMatchObject({ status: 403, code: 'self_approval_forbidden' });
      await expect(approvals.reject(as(both), out.call.approvalId!, 'mine')).rejects.toMatchObject({ code: 'self_approval_forbidden' });
      expect(runs).toHaveLength(0);
    });

    it('runs edited arguments, validated, kept beside the originals', async () => {
      const out = await call('write', { q: 'x' });
      const bad = await denial(() => approvals.approve(as(approverKey), out.call.approvalId!, { arguments: { q: 2 } }));
      expect([bad.code, bad.errors![0].path]).toEqual(['invalid_arguments', 'arguments.q']);
      expect((await reads.getApproval(orgId, out.call.approvalId!)).status).toBe('pending');

      const decided = await approvals.approve(as(approverKey), out.call.approvalId!, { arguments: { q: 'y', n: 3 } });
      expect(runs.map((r) => r.args)).toEqual([{ q: 'y', n: 3 }]);
      expect(decided.toolCall).toMatchObject({
        arguments: { q: 'x', n: 1 },
        argumentsEdited: true,
        executedArguments: { q: 'y', n: 3 },
        executedArgumentsHash: canonicalHash({ q: 'y', n: 3 }),
      });
      expect(decided.approval).toMatchObject({
        approvedArguments: { q: 'y', n: 3 },
        approvedArgumentsHash: canonicalHash({ q: 'y', n: 3 }),
        argumentsHash: canonicalHash({ q: 'x', n: 1 }),
      });
      const events = await eventsOf(out.call.approvalId!);
      expect(events[1]).toMatchObject({
        type: 'approval.approved',
        data: { argumentsHash: canonicalHash({ q: 'x', n: 1 }), approvedArgumentsHash: canonicalHash({ q: 'y', n: 3 }) },
      });
    });

    it('checks the scopes again when the approved call runs, and leaves the approval pending', async () => {
      built.tools = [...built.tools, runnable({ name: 'scopedWrite', risk: 'mutating', scopes: ['crm:write'] })];
      const out = await call('scopedWrite', { q: 'x' });
      const revoked: ApiKeyPrincipal = { ...approverKey, orgScopes: [] };
      const err = await denial(() => approvals.approve(as(revoked), out.call.approvalId!, {}));
      expect([err.status, err.code]).toEqual([403, 'scope_not_granted']);
      expect((await reads.getApproval(orgId, out.call.approvalId!)).status).toBe('pending');
      expect(runs).toHaveLength(0);
    });

    it('fails closed when the stored arguments no longer match the bound hash', async () => {
      const out = await call('write', { q: 'x' });
      await ds.query(`UPDATE tool_call SET arguments = '{"q":"evil","n":1}' WHERE id = $1`, [out.call.id]);
      const err = await denial(() => approvals.approve(as(approverKey), out.call.approvalId!, {}));
      expect([err.status, err.code]).toEqual([409, 'approval_arguments_changed']);
      expect(runs).toHaveLength(0);
    });

    it('says so when the check cannot answer for the bound arguments now, and leaves the approval pending', async () => {
      const out = await call('write', { q: 'x' });
      uncheckable = "the server's input schema cannot be used: checking these arguments against it takes more than 2000 ms";
      try {
        const err = await denial(() => approvals.approve(as(approverKey), out.call.approvalId!, {}));
        // Was 409 approval_arguments_changed: told to reject arguments nobody changed.
        expect([err.status, err.code, err.errors]).toEqual([422, 'invalid_arguments', [expect.objectContaining({ path: 'arguments', code: 'schema' })]]);
      } finally {
        uncheckable = undefined;
      }
      expect((await reads.getApproval(orgId, out.call.approvalId!)).status).toBe('pending');
      expect(runs).toHaveLength(0);
      await approvals.approve(as(approverKey), out.call.approvalId!, {});
      expect(runs.map((r) => r.args)).toEqual([{ q: 'x', n: 1 }]);
    });

    it('rejects with a reason the call carries', async () => {
      const out = await call('drop', { q: 'x' });
      const decided = await approvals.reject(as(approverKey), out.call.approvalId!, 'not today');
      expect(decided.approval).toMatchObject({ status: 'rejected', note: 'not today', decidedBy: approverKey.id });
      expect(decided.toolCall).toMatchObject({ status: 'rejected', error: { code: 'approval_rejected', message: 'not today' } });
      await expect(approvals.approve(as(approverKey), out.call.approvalId!, {})).rejects.toMatchObject({ code: 'approval_already_decided' });
      expect(runs).toHaveLength(0);
    });

    it('reads an approval past its expiry as expired, refuses it, and records the expiry once', async () => {
      const out = await call('write', { q: 'x' });
      await ds.query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [out.call.approvalId]);
      await ds.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, [out.call.id]);
      expect((await reads.getApproval(orgId, out.call.approvalId!)).status).toBe('expired');
      expect(await reads.get(orgId, out.call.id)).toMatchObject({ status: 'expired', error: { code: 'approval_expired' } });
      await expect(approvals.approve(as(approverKey), out.call.approvalId!, {})).rejects.toMatchObject({ status: 409, code: 'approval_expired' });
      await expect(approvals.reject(as(approverKey), out.call.approvalId!, 'late')).rejects.toMatchObject({ code: 'approval_expired' });
      expect((await eventsOf(out.call.approvalId!)).map((e) => e.type)).toEqual(['approval.requested', 'approval.expired']);
      expect(runs).toHaveLength(0);
    });
  });

  describe('the sweeper', () => {
    it('marks a running call past its lease interrupted, never re-running it, and expires stale approvals', async () => {
      const out = await call('write', { q: 'x' });
      // What a process that died mid-run leaves behind: running, lease in the past.
      await ds.query(`UPDATE approval SET status = 'approved', decided_at = now(), decided_by = $2 WHERE id = $1`, [out.call.approvalId, approverKey.id]);
      await ds.query(`UPDATE tool_call SET status = 'running', lease_expires_at = now() - interval '1 second' WHERE id = $1`, [out.call.id]);
      const stale = await call('drop', { q: 'y' });
      await ds.query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [stale.call.approvalId]);
      await ds.query(`UPDATE tool_call SET approval_expires_at = now() - interval '1 second' WHERE id = $1`, [stale.call.id]);

      const report = await sweeper.sweepOnce();
      expect(report).toMatchObject({ interrupted: 1, expired: 1 });
      expect(await reads.get(orgId, out.call.id)).toMatchObject({ status: 'failed', error: { code: 'interrupted' } });
      expect((await eventsOf(out.call.id)).map((e) => [e.type, e.actor_id])).toEqual([
        ['tool_call.requested', agentKey.id],
        ['tool_call.failed', 'tool-call-sweeper'],
      ]);
      const [row] = await ds.query(`SELECT status, completed_at IS NOT NULL AS done FROM tool_call WHERE id = $1`, [stale.call.id]);
      expect(row).toEqual({ status: 'expired', done: true });
      expect((await eventsOf(stale.call.approvalId!)).map((e) => e.type)).toEqual(['approval.requested', 'approval.expired']);
      expect(runs).toHaveLength(0);
      expect(await sweeper.sweepOnce()).toMatchObject({ interrupted: 0, expired: 0 });
    });

    it('starts on an interval and stops', async () => {
      const out = await call('write', { q: 'x' });
      await ds.query(`UPDATE approval SET expires_at = now() - interval '1 second' WHERE id = $1`, [out.call.approvalId]);
      const expired = new Promise<void>((resolve) => {
        const stop = moduleSettled().listen(out.call.id, () => (stop(), resolve()));
      });
      sweeper.start(10);
      await expired;
      await sweeper.stop();
      expect((await eventsOf(out.call.approvalId!)).map((e) => e.type)).toEqual(['approval.requested', 'approval.expired']);
    });
  });

  describe('waiting for a decision and resuming (the MCP path)', () => {
    it('wakes a waiter when the call is decided in this process', async () => {
      const out = await call('write', { q: 'x' }, { entryPoint: 'mcp' });
      const progress: number[] = [];
      const waiting = waiter.waitForDecision(orgId, out.call.id, { timeoutMs: 60_000, pollMs: 20, onProgress: (_c, ms) => progress.push(ms) });
      await new Promise((r) => setTimeout(r, 50));
      await approvals.approve(as(approverKey), out.call.approvalId!, {});
      expect(await waiting).toMatchObject({ status: 'succeeded', entryPoint: 'mcp' });
      expect(progress.length).toBeGreaterThan(0);
    });

    it('returns the call as it stands when the wait runs out', async () => {
      const out = await call('write', { q: 'x' });
      expect(await waiter.waitForDecision(orgId, out.call.id, { timeoutMs: 30, pollMs: 10 })).toMatchObject({ status: 'pending_approval' });
      await expect(waiter.waitForDecision(randomUUID(), out.call.id, { timeoutMs: 1 })).rejects.toMatchObject({ code: 'not_found' });
    });

    it('answers a re-asked call with the same call, then its decision once, then a new call', async () => {
      const args = { q: `resume-${randomUUID()}` };
      const first = await call('write', args, { resumePending: true, entryPoint: 'mcp' });
      const again = await call('write', { ...args, n: 1 }, { resumePending: true, entryPoint: 'mcp' });
      expect([again.status, again.resumed, again.call.id]).toEqual([202, true, first.call.id]);
      await approvals.approve(as(approverKey), first.call.approvalId!, {});
      const decided = await call('write', args, { resumePending: true, entryPoint: 'mcp' });
      expect([decided.status, decided.resumed, decided.call.id, decided.call.status]).toEqual([200, true, first.call.id, 'succeeded']);
      const fresh = await call('write', args, { resumePending: true, entryPoint: 'mcp' });
      expect([fresh.status, fresh.resumed]).toEqual([202, false]);
      expect(fresh.call.id).not.toBe(first.call.id);
      expect(runs).toHaveLength(1);
    });
  });

  describe('idempotency', () => {
    it('replays the first answer for the same key and body, and refuses another body', async () => {
      const key = `k-${randomUUID()}`;
      const first = await call('read', { q: 'x' }, { idempotencyKey: key });
      const again = await call('read', { q: 'x' }, { idempotencyKey: key });
      expect(again).toEqual({ ...first, replayed: true });
      expect(runs).toHaveLength(1);
      await expect(call('read', { q: 'other' }, { idempotencyKey: key })).rejects.toMatchObject({ status: 422, code: 'idempotency_key_reused' });
      const pending = await call('write', { q: 'x' }, { idempotencyKey: `${key}-w` });
      expect(await call('write', { q: 'x' }, { idempotencyKey: `${key}-w` })).toEqual({ ...pending, replayed: true });
    });

    it('answers 409 while the first request runs, and frees the key of a refused request', async () => {
      const key = `k-${randomUUID()}`;
      const slow = call('slow', { q: 'x' }, { idempotencyKey: key });
      await new Promise((r) => setTimeout(r, 50));
      await expect(call('slow', { q: 'x' }, { idempotencyKey: key })).rejects.toMatchObject({ status: 409, code: 'idempotency_in_progress' });
      expect((await slow).call.error!.code).toBe('timeout');

      const refused = `k-${randomUUID()}`;
      await expect(call('read', { q: 1 }, { idempotencyKey: refused })).rejects.toMatchObject({ code: 'invalid_arguments' });
      await expect(call('read', { q: 1 }, { idempotencyKey: refused })).rejects.toMatchObject({ code: 'invalid_arguments' });
      const [row] = await ds.query(`SELECT count(*)::int AS n FROM idempotency_key WHERE key = $1`, [refused]);
      expect(row.n).toBe(0);
    });

    it('lets a key whose holder died be taken over (a read-only call it left unrecorded runs again: docs/api.md), and forgets keys after a day', async () => {
      const key = `k-${randomUUID()}`;
      // What a node that died while running a read-only call leaves: its claim, past its lease, and no call.
      await ds.query(
        `INSERT INTO idempotency_key (org_id, key, request_hash, claim_id, status, locked_until, expires_at, agent_id)
         VALUES ($1, $2, $3, $4, 'in_progress', now() - interval '1 second', now() + interval '1 day', $5)`,
        [orgId, key, canonicalHash({ agentId, tool: 'read', arguments: { q: 'x' }, version: 'latest', runId: null }), randomUUID(), agentId],
      );
      runs.length = 0;
      const retried = await call('read', { q: 'x' }, { idempotencyKey: key });
      expect([retried.status, retried.replayed, runs.map((r) => r.tool)]).toEqual([200, false, ['read']]);
      await ds.query(`UPDATE idempotency_key SET expires_at = now() - interval '1 second' WHERE key = $1`, [key]);
      expect((await call('read', { q: 'different' }, { idempotencyKey: key })).replayed).toBe(false);
      await ds.query(`UPDATE idempotency_key SET expires_at = now() - interval '1 second' WHERE key = $1`, [key]);
      expect((await sweeper.sweepOnce()).keysDeleted).toBeGreaterThanOrEqual(1);
    });
  });

  describe('a side effect never runs without approval (property)', () => {
    it('holds for any risk, interruptBefore, toolApproval, flags the tool carries (even wrong ones) and arguments', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<ToolRisk>('read_only', 'mutating', 'destructive'),
          fc.boolean(),
          fc.boolean(),
          fc.constantFrom<ApprovalReason | null>(null, 'side_effecting', 'interrupt_before', 'spec_required'),
          fc.boolean(),
          fc.oneof(fc.record({ q: fc.string(), n: fc.integer() }, { requiredKeys: ['q'] }), fc.object(), fc.anything()),
          async (risk, interruptBefore, specRequired, approvalReason, requiresApproval, args) => {
            runs.length = 0;
            const tool = runnable({ name: 'prop', risk, interruptBefore, approvalReason, requiresApproval });
            built.tools = [tool];
            built.spec = { ...built.spec, toolApproval: specRequired ? { prop: 'required' } : {} };
            const gated = risk !== 'read_only' || interruptBefore || specRequired;
            expect(approvalReasonOf({ risk, interruptBefore, toolId: 'prop' }, built.spec.toolApproval) !== null).toBe(gated);
            const out = await call('prop', args).catch((e: unknown) => e);
            if (gated) {
              expect(runs).toHaveLength(0);
              if (!(out instanceof ApiError)) expect((out as { status: number }).status).toBe(202);
            }
            if (risk !== 'read_only') expect(runs).toHaveLength(0);
          },
        ),
        { numRuns: 60 },
      );
    });
  });

  function moduleSettled(): CallSettledNotifier {
    return settledNotifier;
  }
});
