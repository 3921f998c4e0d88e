/**
 * `npm run demo`: a walkthrough of the platform over its HTTP API, printed step by step.
 *
 *   DEMO_URL=http://127.0.0.1:3000 npm run demo    against a running server (`npm start`); the
 *                                                  admin token comes from PLATFORM_ADMIN_TOKEN,
 *                                                  else from DATA_DIR/admin-token (./.data)
 *   npm run demo                                   starts a server of its own on a temporary
 *                                                  embedded database, and removes it afterwards
 *
 * It creates an organization and its keys, a knowledge collection with a few documents, a skill,
 * and an agent with the seven builtin capabilities; publishes it; shows its tools and system
 * prompt; searches the knowledge; asks to remember something (pending), approves it as the
 * approver key, shows the result. It connects the catalog's `everything` MCP server (stdio), binds
 * two of its tools to an agent and calls the mutating one through approval. Then it runs an agent against a scripted OpenAI-compatible model
 * it starts on a loopback port (scripts/scripted-model.ts): the run pauses on a tool call that needs
 * approval and resumes by itself once approved. Last, the audit trail. Everything it creates is
 * new: running it twice against one server is fine. Against a running server (DEMO_URL), that
 * server must be on this machine with 127.0.0.1 in EGRESS_ALLOWED_HOSTS to reach the scripted model.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sequence, startScriptedModel } from './scripted-model';

export interface DemoOptions {
  /** The server's base URL, without `/api/v1`. */
  url: string;
  adminToken: string;
  print?: (line: string) => void;
}

type Json = any;

/** An answer the walkthrough did not expect: the demo stops and says which step failed. */
export class DemoError extends Error {}

class Api {
  constructor(
    readonly base: string,
    readonly print: (line: string) => void,
  ) {}

  async send(method: string, path: string, token: string, body: unknown, expected: number[]): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${this.base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const parsed: Json = text ? JSON.parse(text) : null;
    this.print(`  ${method} /api/v1${path}  ->  ${res.status}`);
    if (!expected.includes(res.status)) {
      throw new DemoError(`${method} ${path} answered ${res.status}, expected ${expected.join(' or ')}: ${text}`);
    }
    return { status: res.status, body: parsed };
  }

  get = (path: string, token: string) => this.send('GET', path, token, undefined, [200]).then((r) => r.body);
  post = (path: string, token: string, body: unknown, expected = [201]) => this.send('POST', path, token, body, expected);
  put = (path: string, token: string, body: unknown) => this.send('PUT', path, token, body, [200]).then((r) => r.body);
}

const DOCUMENTS = [
  {
    title: 'Refund policy',
    content:
      'Customers can ask for a refund within 30 days of delivery. Refunds are paid to the original card within five working days. ' +
      'A refund needs the order number; items bought on sale are refunded at the sale price.',
  },
  { title: 'Shipping times', content: 'Parcels ship within two working days. Express delivery arrives the next working day if ordered before 2 pm.' },
  { title: 'Opening hours', content: 'The support desk answers from 8 am to 6 pm, Monday to Friday. Outside those hours, customers can leave a message.' },
];

export async function runDemo(options: DemoOptions): Promise<void> {
  const print = options.print ?? ((line: string) => process.stdout.write(line + '\n'));
  const api = new Api(options.url.replace(/\/+$/, ''), print);
  const admin = options.adminToken;
  let step = 0;
  const section = (title: string) => print(`\n${++step}. ${title}`);
  const show = (text: string) => print(text.replace(/^/gm, '     '));

  section('The platform admin creates an organization, granted the scopes the demo needs');
  const slug = `demo-${randomBytes(3).toString('hex')}`;
  const org = (await api.post('/orgs', admin, { slug, name: 'Acme (demo)', scopes: ['knowledge:read', 'memory:read', 'memory:write'] })).body;
  show(`organization ${org.slug} (${org.id}), scopes: ${org.scopes.join(', ')}`);

  section('...and one API key per role (each token is shown once, when it is created)');
  const keys: Record<string, { id: string; token: string }> = {};
  for (const role of ['admin', 'builder', 'agent', 'approver']) {
    const key = (await api.post(`/orgs/${org.id}/api-keys`, admin, { name: `demo ${role}`, roles: [role] })).body;
    keys[role] = { id: key.id, token: key.token };
  }
  show(
    Object.entries(keys)
      .map(([role, k]) => `${role.padEnd(8)} key ${k.id}`)
      .join('\n'),
  );
  const builder = keys.builder.token;

  section('The builder writes a knowledge collection with a few documents, and a skill');
  const collection = (await api.post('/knowledge/collections', builder, { name: 'Support handbook', description: 'Refunds, shipping and opening hours' })).body;
  for (const doc of DOCUMENTS) await api.post(`/knowledge/collections/${collection.id}/documents`, builder, doc);
  const skill = (
    await api.post('/skills', builder, {
      name: 'Refund request',
      description: 'When a customer asks for their money back',
      instructions: '1. Ask for the order number.\n2. Check the refund policy.\n3. Say when the money will arrive.',
    })
  ).body;
  show(`collection "${collection.name}" with ${DOCUMENTS.length} documents; skill "${skill.name}"`);

  section('The builder creates an agent from the seven builtin capabilities and publishes it');
  const agent = (await api.post('/agents', builder, { slug: 'support-assistant', name: 'Support assistant' })).body;
  await api.put(`/agents/${agent.id}/draft`, builder, {
    instructions: 'You are the support assistant of Acme. Answer briefly and politely.',
    capabilities: [
      { id: 'knowledge', config: { maxResults: 3 } },
      { id: 'skills' },
      { id: 'memory' },
      { id: 'memory-write', config: { maxMemories: 100 } },
      { id: 'thinking', config: { effort: 'medium' } },
      { id: 'budget', config: { maxToolCallsPerRun: 20 } },
      { id: 'compaction', config: { strategy: 'clear_tool_results', keepLastTurns: 8 } },
    ],
    resources: { knowledgeCollections: [collection.id], skills: [skill.id] },
  });
  const version = (await api.post(`/agents/${agent.id}/publish`, builder, undefined)).body;
  show(
    `version ${version.version} published, spec hash ${version.specHash.slice(0, 16)}..., ${Object.keys(version.toolDigests).length} tool definitions pinned`,
  );

  section('What the model is offered: its tools, and its manifest (system prompt and settings)');
  const agentKey = keys.agent.token;
  const tools = (await api.get(`/agents/${agent.id}/versions/latest/tools`, agentKey)).items;
  show(tools.map((x: Json) => `${x.name.padEnd(17)} ${x.risk.padEnd(12)} ${x.requiresApproval ? 'needs approval' : ''}`.trimEnd()).join('\n'));
  const manifest = await api.get(`/agents/${agent.id}/versions/latest/manifest`, agentKey);
  show(`system prompt:\n${indent(manifest.systemPrompt)}`);
  show(`settings: ${JSON.stringify(manifest.settings)}`);

  section('The agent runtime calls search_knowledge');
  const search = (
    await api.post(
      `/agents/${agent.id}/tool-calls`,
      agentKey,
      { tool: 'search_knowledge', arguments: { query: 'How long do I have to ask for a refund?' }, runId: 'demo-run' },
      [200],
    )
  ).body;
  show(`status ${search.status}${search.result.message ? `: ${search.result.message}` : ''}`);
  show(search.result.results.map((r: Json, i: number) => `${i + 1}. ${r.title} (${r.collection}, score ${r.score})\n   ${r.snippet}`).join('\n'));

  section('It asks to remember something: a side effect, so it waits for a person');
  const asked = (
    await api.post(
      `/agents/${agent.id}/tool-calls`,
      agentKey,
      { tool: 'remember', arguments: { content: 'The customer prefers answers in French', tags: ['language'] }, runId: 'demo-run' },
      [202],
    )
  ).body;
  show(`status ${asked.status}, approval ${asked.approvalId}; nothing has been written yet`);

  section('The approver reads the pending approval and approves it; the tool runs once, with exactly those arguments');
  const approver = keys.approver.token;
  const pending = (await api.get('/approvals?status=pending', approver)).items;
  for (const a of pending) show(`pending: ${a.tool} ${JSON.stringify(a.arguments)} (reason: ${a.reason}, hash ${a.argumentsHash.slice(0, 12)}...)`);
  const decided = (await api.post(`/approvals/${asked.approvalId}/approve`, approver, { note: 'Fine to keep.' }, [200])).body;
  show(`approval ${decided.approval.status} by key ${decided.approval.decidedBy}; tool call ${decided.toolCall.status}`);
  show(`result: ${JSON.stringify(decided.toolCall.result)}`);

  section('The memory is there for the next conversation');
  const recall = (
    await api.post(`/agents/${agent.id}/tool-calls`, agentKey, { tool: 'recall_memories', arguments: { query: 'language' }, runId: 'demo-run' }, [200])
  ).body;
  show(recall.result.memories.map((m: Json) => `- ${m.content} [${m.tags.join(', ')}]`).join('\n'));

  await catalogToolThroughApproval(api, keys, section, show);

  await runAgainstScriptedModel(api, keys, section, show);

  section('The audit trail, newest first (admin key)');
  const events = (await api.get('/audit-events?limit=30', keys.admin.token)).items;
  const actors = new Map(Object.entries(keys).map(([role, k]) => [k.id, `${role} key`]));
  show(
    events
      .map(
        (e: Json) => `${e.at.slice(11, 19)}  ${e.type.padEnd(21)} by ${(actors.get(e.actor.id) ?? e.actor.type).padEnd(12)} on ${e.target.type} ${e.target.id}`,
      )
      .join('\n'),
  );
  print('\nDone. Everything above went through the HTTP API; open /api/docs on the server to try more.');
}

/**
 * A catalog MCP server: the `everything` reference server, started over stdio by the platform
 * (offline, no credentials). Its tool annotations are trusted, so its mutating tool needs approval.
 */
async function catalogToolThroughApproval(
  api: Api,
  keys: Record<string, { id: string; token: string }>,
  section: (title: string) => void,
  show: (text: string) => void,
): Promise<void> {
  section('The admin connects the "everything" MCP server from the catalog (stdio, started by the platform)');
  const connection = (await api.post('/mcp-connections', keys.admin.token, { server: 'everything', name: 'reference' })).body;
  const listed = (name: string) => connection.tools.find((x: Json) => x.name === name);
  show(`connection ${connection.name} (${connection.id}) lists ${connection.tools.length} tools, e.g.`);
  show(['echo', 'toggle-simulated-logging'].map((n) => `  ${n.padEnd(25)} ${listed(n)?.risk} (from its ${listed(n)?.riskSource})`).join('\n'));

  section('The builder binds two of its tools to an agent and publishes it (their definitions are pinned)');
  const builder = keys.builder.token;
  const agent = (await api.post('/agents', builder, { slug: 'reference-tools', name: 'Reference tools' })).body;
  await api.put(`/agents/${agent.id}/draft`, builder, {
    instructions: 'Use the reference server.',
    capabilities: [],
    mcpServers: [{ connection: connection.id, tools: ['echo', 'toggle-simulated-logging'] }],
  });
  const version = (await api.post(`/agents/${agent.id}/publish`, builder, undefined)).body;
  show(`version ${version.version} published, tools pinned: ${Object.keys(version.toolDigests).sort().join(', ')}`);

  section('The agent runtime calls toggle-simulated-logging, a mutating tool: it waits for a person');
  const asked = (await api.post(`/agents/${agent.id}/tool-calls`, keys.agent.token, { tool: 'toggle-simulated-logging', arguments: {} }, [202])).body;
  show(`status ${asked.status} (${asked.toolId}), approval ${asked.approvalId}`);
  const decided = (await api.post(`/approvals/${asked.approvalId}/approve`, keys.approver.token, { note: 'Go ahead.' }, [200])).body;
  show(`approval ${decided.approval.status}; tool call ${decided.toolCall.status} on the MCP server`);
  show(`result: ${decided.toolCall.result.content.map((c: Json) => c.text).join(' ')}`);
}

/**
 * A run: the platform calls the model, the model calls a tool that needs approval, the run waits,
 * a person approves, the run resumes by itself. The model is a script on a loopback port speaking
 * the real Chat Completions wire format, so the demo needs no model account and is the same on
 * every run.
 */
async function runAgainstScriptedModel(
  api: Api,
  keys: Record<string, { id: string; token: string }>,
  section: (title: string) => void,
  show: (text: string) => void,
): Promise<void> {
  const model = await startScriptedModel(
    sequence(
      { toolCalls: [{ id: 'call_1', name: 'remember', arguments: JSON.stringify({ content: 'Order A-1042 was refunded on request', tags: ['refund'] }) }] },
      { text: 'Your refund for order A-1042 is on its way: the money reaches your card within five working days.' },
    ),
  );
  try {
    section('The admin registers a model provider: an OpenAI-compatible server (here a scripted one on a loopback port)');
    const provider = (
      await api.post('/model-providers', keys.admin.token, {
        name: `scripted-${randomBytes(3).toString('hex')}`,
        kind: 'openai-compatible',
        baseUrl: model.url,
        apiKey: 'sk-demo-not-secret',
      })
    ).body;
    show(`provider ${provider.name} at ${provider.baseUrl}, API key stored sealed (hasApiKey: ${provider.hasApiKey})`);

    section('The builder gives an agent that model and publishes it');
    const builder = keys.builder.token;
    const agent = (await api.post('/agents', builder, { slug: 'refund-desk', name: 'Refund desk' })).body;
    await api.put(`/agents/${agent.id}/draft`, builder, {
      instructions: 'You handle refund requests for Acme. Note each refund you promise.',
      capabilities: [{ id: 'memory-write', config: { maxMemories: 100 } }],
      model: { provider: provider.id, name: 'scripted-1', temperature: 0 },
    });
    const version = (await api.post(`/agents/${agent.id}/publish`, builder, undefined)).body;
    show(`version ${version.version} published with model scripted-1`);

    section('The agent key starts a run; the model calls remember, which needs approval, so the run waits');
    const agentKey = keys.agent.token;
    const started = (await api.send('POST', `/agents/${agent.id}/runs`, agentKey, { input: 'Please refund order A-1042.' }, [201])).body;
    const waiting = await untilRun(api, started.id, agentKey, ['waiting_for_approval', 'succeeded', 'failed']);
    if (waiting.status !== 'waiting_for_approval')
      throw new DemoError(`the run ended ${waiting.status} instead of waiting for approval: ${JSON.stringify(waiting.error ?? null)}`);
    show(`run ${waiting.id}: status ${waiting.status}, pending approvals ${waiting.pendingApprovalIds.join(', ')}`);
    show(`transcript so far:\n${transcript(waiting.messages)}`);

    section('The approver approves; the run resumes by itself, the model sees the result and answers');
    for (const id of waiting.pendingApprovalIds) await api.post(`/approvals/${id}/approve`, keys.approver.token, { note: 'Refund confirmed.' }, [200]);
    const done = await untilRun(api, started.id, agentKey, ['succeeded', 'failed', 'cancelled']);
    if (done.status !== 'succeeded') throw new DemoError(`the run ended ${done.status}: ${JSON.stringify(done.error ?? null)}`);
    show(`run ${done.id}: status ${done.status}, ${done.usage.modelCalls} model calls, ${done.usage.toolCalls} tool call`);
    show(`transcript:\n${transcript(done.messages)}`);
    show(`output: ${done.output}`);
  } finally {
    await model.close();
  }
}

/** Polls the run until it reaches one of `statuses` (a run resumes on the server, not in this process). */
async function untilRun(api: Api, runId: string, token: string, statuses: string[], ms = 60_000): Promise<Json> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await fetch(`${api.base}/api/v1/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new DemoError(`GET /runs/${runId} answered ${res.status}: ${await res.text()}`);
    const run: Json = await res.json();
    if (statuses.includes(run.status)) {
      api.print(`  GET /api/v1/runs/${runId}  ->  200 (${run.status})`);
      return run;
    }
    if (Date.now() > deadline) throw new DemoError(`run ${runId} still ${run.status} after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function transcript(messages: Json[]): string {
  return messages
    .map((m: Json) => {
      if (m.role === 'tool') return `  tool (${m.name}): ${m.content}`;
      const calls = (m.toolCalls ?? []).map((c: Json) => `calls ${c.name} ${c.arguments}`).join('; ');
      return `  ${m.role}: ${[m.content, calls].filter(Boolean).join(' ')}`;
    })
    .join('\n');
}

function indent(text: string): string {
  return text.replace(/^/gm, '  | ');
}

/** A server of the demo's own, as `npm start` runs it, on a temporary embedded database. */
export async function startOwnServer(): Promise<{ url: string; adminToken: string; stop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'capability-demo-'));
  const adminToken = `demo_${randomBytes(24).toString('base64url')}`;
  const root = join(__dirname, '..');
  // 127.0.0.1 is allowed out so that the server reaches the demo's scripted model on a loopback port.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    PLATFORM_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: 'warn',
    EGRESS_ALLOWED_HOSTS: '127.0.0.1',
  };
  // The embedded database, whatever the caller's environment points at.
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['-r', '@swc-node/register', join(root, 'src', 'main.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(output);
      if (m) {
        clearInterval(timer);
        resolve(m[1]);
      }
    }, 50);
    void exited.then(() => {
      clearInterval(timer);
      cleanUp();
      reject(new DemoError(`the server did not start:\n${output}`));
    });
  });
  return {
    url,
    adminToken,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      cleanUp();
    },
  };
}

function adminTokenFor(env: NodeJS.ProcessEnv): string {
  if (env.PLATFORM_ADMIN_TOKEN) return env.PLATFORM_ADMIN_TOKEN;
  const file = join(env.DATA_DIR ?? './.data', 'admin-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  throw new DemoError(
    `DEMO_URL is set but no admin token was found: set PLATFORM_ADMIN_TOKEN, or DATA_DIR to the server's data directory (${file} does not exist).`,
  );
}

async function main(): Promise<void> {
  const env = process.env;
  if (env.DEMO_URL) {
    process.stdout.write(`Demo against ${env.DEMO_URL}\n`);
    await runDemo({ url: env.DEMO_URL, adminToken: adminTokenFor(env) });
    return;
  }
  process.stdout.write('Starting a server of its own on a temporary embedded database (set DEMO_URL to use a running one)...\n');
  const server = await startOwnServer();
  process.stdout.write(`Server listening on ${server.url}\n`);
  try {
    await runDemo({ url: server.url, adminToken: server.adminToken });
  } finally {
    await server.stop();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`\ndemo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
