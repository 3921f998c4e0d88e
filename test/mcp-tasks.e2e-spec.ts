import { Client, StreamableHTTPClientTransport, type CallToolResult, type StandardSchemaV1 } from '@modelcontextprotocol/client';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createApp } from '../src/app.factory';
import { TASKS_EXTENSION } from '../src/mcp/mcp-tasks';
import { McpFixturesModule, mcpRunsTagged } from './fixtures/mcp-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { until } from './support/until';

/**
 * Issue 20: approvals as MCP tasks. A 2.x client on 2026-07-28 that declares the Tasks extension
 * gets a task at once for a call that needs approval, and follows it with `tasks/get` to the
 * tool's result, a rejection, or across a restart of the server: the task is the stored tool
 * call, never a node's memory. A client without the extension keeps the held request.
 */
type Task = {
  taskId: string;
  status: string;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs?: number;
  result?: CallToolResult;
  error?: { code: number; message: string };
};

const TASK_META = 'test/createdTask';

/**
 * The 2.x client as a task-aware runtime would use it. The SDK speaks the extension's methods
 * (`tasks/get` with a schema of one's own) but refuses a `tools/call` answered with
 * `resultType: "task"`; this client takes such an answer out of the response and hands it to
 * the caller in the result's `_meta`, before the SDK decodes it.
 */
class TaskAwareClient extends Client {
  protected override _onresponse(response: Parameters<Client['_onresponse']>[0]): void {
    const result = (response as { result?: Record<string, unknown> }).result;
    if (result?.resultType === 'task') {
      (response as { result: unknown }).result = { resultType: 'complete', content: [], _meta: { [TASK_META]: result } };
    }
    super._onresponse(response);
  }

  /** The task, or undefined when the server answered with the tool's result. */
  async callToolForTask(name: string, args: Record<string, unknown>): Promise<Task | undefined> {
    const result = await this.callTool({ name, arguments: args });
    return result._meta?.[TASK_META] as Task | undefined;
  }

  getTask(taskId: string): Promise<Task> {
    return this.request({ method: 'tasks/get', params: { taskId } }, ANY_TASK);
  }
}

const ANY_TASK: StandardSchemaV1<unknown, Task> = {
  '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as Task }) },
};

describe('MCP approvals as tasks (e2e)', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  let agentId: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    // A long wait: were the task-aware client held like the others, the tests would time out.
    t = await createTestApp({ imports: [McpFixturesModule], config: { mcpApprovalWaitSeconds: 600 } });
    await t.app.listen(0, '127.0.0.1');
    base = await t.app.getUrl();
    org = await createOrg(t);
    const a = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'tasks', name: 'Tasks' })
      .expect(201);
    agentId = a.body.id;
    await t.http
      .put(`/api/v1/agents/${agentId}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'You keep notes.', capabilities: [{ id: 'fx-mcp-notes' }], toolOverrides: { 'fx-mcp-purge': { name: 'purgeNotes' } } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agentId}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t?.close();
  });

  async function connect(at = base, token = org.keys.agent): Promise<TaskAwareClient> {
    const client = new TaskAwareClient(
      { name: 'tasks-e2e', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${at}/api/v1/agents/${agentId}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    clients.push(client);
    return client;
  }

  const settled = (client: TaskAwareClient, taskId: string) =>
    until(
      () => client.getTask(taskId),
      (task) => task.status !== 'working',
    );

  it('advertises the extension in server/discover', async () => {
    const client = await connect();
    expect(client.getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
  });

  it('a call that needs approval is a working task at once, naming the approval and where to decide; approved over REST it completes with the result; the tool ran once', async () => {
    const client = await connect();
    const tag = randomUUID();
    const task = (await client.callToolForTask('fx-mcp-write', { tag, text: 'Refund approved.' }))!;
    expect(task).toMatchObject({ status: 'working', ttlMs: null, pollIntervalMs: 2000 });
    const approval = (
      await t.http
        .get(`/api/v1/tool-calls/${task.taskId}`)
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body;
    expect(approval).toMatchObject({ status: 'pending_approval', entryPoint: 'mcp' });
    expect(task.statusMessage).toContain(`approval ${approval.approvalId}`);
    expect(task.statusMessage).toContain(`POST /api/v1/approvals/${approval.approvalId}/approve`);
    expect(mcpRunsTagged(tag)).toEqual([]);
    expect(await client.getTask(task.taskId)).toMatchObject({ taskId: task.taskId, status: 'working' });

    await t.http
      .post(`/api/v1/approvals/${approval.approvalId}/approve`)
      .set(...bearer(org.keys.approver))
      .send({})
      .expect(200);
    const done = await settled(client, task.taskId);
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ structuredContent: { written: tag, text: 'Refund approved.' } });
    expect(done.result!.isError).toBeFalsy();
    // Asked again, the task stays completed, and nothing runs again.
    expect((await client.getTask(task.taskId)).status).toBe('completed');
    expect(mcpRunsTagged(tag)).toHaveLength(1);
  });

  it('rejected over REST, the task fails with the reason; nothing runs', async () => {
    const client = await connect();
    const tag = randomUUID();
    const task = (await client.callToolForTask('purgeNotes', { tag }))!;
    const call = (
      await t.http
        .get(`/api/v1/tool-calls/${task.taskId}`)
        .set(...bearer(org.keys.viewer))
        .expect(200)
    ).body;
    await t.http
      .post(`/api/v1/approvals/${call.approvalId}/reject`)
      .set(...bearer(org.keys.approver))
      .send({ reason: 'Not during the audit.' })
      .expect(200);
    const failed = await settled(client, task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toContain('Not during the audit.');
    expect(failed.error).toMatchObject({ code: -32000, message: expect.stringContaining('Not during the audit.') });
    expect(mcpRunsTagged(tag)).toEqual([]);
  });

  it('a read-only call is answered with its result, not a task', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'fx-mcp-greet', arguments: { tag: 'x' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Hello, x!' }]);
    expect(result._meta?.[TASK_META]).toBeUndefined();
  });

  it("another key, a client without the extension, or an unknown id cannot follow someone's task", async () => {
    const client = await connect();
    const task = (await client.callToolForTask('fx-mcp-write', { tag: randomUUID(), text: 'Mine.' }))!;
    const second = await t.http
      .post(`/api/v1/orgs/${org.id}/api-keys`)
      .set(...bearer(org.keys.admin))
      .send({ name: 'second agent', roles: ['agent'] })
      .expect(201);
    const other = await connect(base, second.body.token);
    await expect(other.getTask(task.taskId)).rejects.toMatchObject({ code: -32602 });
    await expect(client.getTask(randomUUID())).rejects.toMatchObject({ code: -32602 });
    await expect(client.getTask('../../etc')).rejects.toMatchObject({ code: -32602 });
    const plain = new TaskAwareClient({ name: 'no-tasks', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await plain.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/api/v1/agents/${agentId}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } },
      }),
    );
    clients.push(plain);
    await expect(plain.getTask(task.taskId)).rejects.toMatchObject({ code: -32021 });
  });

  it('a client without the extension is held as before (here until the wait ends: still pending, not a task)', async () => {
    t.config.mcpApprovalWaitSeconds = 0;
    try {
      const plain = new TaskAwareClient({ name: 'no-tasks', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await plain.connect(
        new StreamableHTTPClientTransport(new URL(`${base}/api/v1/agents/${agentId}/mcp`), {
          requestInit: { headers: { Authorization: `Bearer ${org.keys.agent}` } },
        }),
      );
      clients.push(plain);
      const result = await plain.callTool({ name: 'fx-mcp-write', arguments: { tag: randomUUID(), text: 'Plain.' } });
      expect(result._meta?.[TASK_META]).toBeUndefined();
      expect((result._meta!['capability-platform/toolCall'] as { status: string }).status).toBe('pending_approval');
    } finally {
      t.config.mcpApprovalWaitSeconds = 600;
    }
  });

  it('survives a restart: the task made on one server is followed to its result on the next one, on the same database', async () => {
    const client = await connect();
    const tag = randomUUID();
    const task = (await client.callToolForTask('fx-mcp-write', { tag, text: 'Across a restart.' }))!;
    await client.close();
    await t.app.close();

    const next: NestFastifyApplication = await createApp({
      config: t.config,
      database: { url: t.db.url, poolSize: t.db.poolSize },
      imports: [McpFixturesModule],
      logger: false,
    });
    try {
      await next.listen(0, '127.0.0.1');
      const nextBase = await next.getUrl();
      const call = (
        await request(nextBase)
          .get(`/api/v1/tool-calls/${task.taskId}`)
          .set(...bearer(org.keys.viewer))
          .expect(200)
      ).body;
      await request(nextBase)
        .post(`/api/v1/approvals/${call.approvalId}/approve`)
        .set(...bearer(org.keys.approver))
        .send({})
        .expect(200);
      const again = await connect(nextBase);
      const done = await settled(again, task.taskId);
      expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { written: tag, text: 'Across a restart.' } } });
      expect(mcpRunsTagged(tag)).toHaveLength(1);
      await again.close();
    } finally {
      await next.close();
      // The first app is closed already; only its database is left to remove.
      t.app = { close: async () => undefined } as unknown as NestFastifyApplication;
    }
  });
});
