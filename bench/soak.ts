/**
 * Soak: mixed traffic against one server process for a few minutes; reports unexpected answers
 * (any 5xx, or a status the step does not expect) and the server's memory over time.
 * Not part of `npm test`. Run: `npm run soak` (SOAK_SECONDS, SOAK_CONCURRENCY; DATABASE_URL to
 * soak against a PostgreSQL server, otherwise a temporary embedded DATA_DIR).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 180);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 8);
const ADMIN = 'cpa_soak_' + randomBytes(16).toString('hex');

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** With DATABASE_URL, the soak gets a fresh database of its own on that server, dropped after. */
async function freshDatabase(): Promise<{ url?: string; drop(): Promise<void> }> {
  const server = process.env.DATABASE_URL;
  if (!server) return { drop: async () => {} };
  const name = `soak_${Date.now().toString(36)}`;
  const admin = new Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

async function startServer(databaseUrl?: string): Promise<{ child: ChildProcess; url: string }> {
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: '0',
    LOG_LEVEL: 'error',
    PLATFORM_ADMIN_TOKEN: ADMIN,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    DATA_DIR: mkdtempSync(join(tmpdir(), 'soak-')),
    RATE_LIMIT_PER_KEY: '0',
    RATE_LIMIT_PER_ORG: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  for (;;) {
    const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
    if (m) return { child, url: m[1] };
    if (child.exitCode !== null) throw new Error(`server exited: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const database = await freshDatabase();
  const { child, url } = await startServer(database.url);
  const api = async (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: any }> => {
    const res = await fetch(url + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const must = async (method: string, path: string, token: string, body: unknown, status: number) => {
    const r = await api(method, path, token, body);
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };

  // The world: one organization, its keys, a collection of documents, an agent with knowledge and memory.
  const org = await must('POST', '/api/v1/orgs', ADMIN, { slug: 'soak', name: 'Soak', scopes: ['knowledge:read', 'memory:read', 'memory:write'] }, 201);
  const key = async (role: string) => (await must('POST', `/api/v1/orgs/${org.id}/api-keys`, ADMIN, { name: role, roles: [role] }, 201)).token as string;
  const [builder, agentKey, approver, viewer] = [await key('builder'), await key('agent'), await key('approver'), await key('viewer')];
  const collection = await must('POST', '/api/v1/knowledge/collections', builder, { name: 'Handbook' }, 201);
  for (let i = 0; i < 20; i++) {
    await must(
      'POST',
      `/api/v1/knowledge/collections/${collection.id}/documents`,
      builder,
      { title: `Policy ${i}`, content: `Refunds policy number ${i}: refunds are issued within ${i + 1} days. `.repeat(20) },
      201,
    );
  }
  const agent = await must('POST', '/api/v1/agents', builder, { slug: 'soaked', name: 'Soaked' }, 201);
  await must(
    'PUT',
    `/api/v1/agents/${agent.id}/draft`,
    builder,
    {
      instructions: 'Help customers.',
      capabilities: [{ id: 'knowledge' }, { id: 'memory' }, { id: 'memory-write', config: { maxMemories: 100000 } }, { id: 'budget' }, { id: 'clock' }],
      resources: { knowledgeCollections: [collection.id] },
    },
    200,
  );
  await must('POST', `/api/v1/agents/${agent.id}/publish`, builder, undefined, 201);

  type Step = { name: string; weight: number; run: () => Promise<{ status: number; ok: number[] }> };
  let n = 0;
  const steps: Step[] = [
    { name: 'catalog', weight: 10, run: async () => ({ ...(await api('GET', '/api/v1/agents/capabilities', agentKey)), ok: [200] }) },
    {
      name: 'offered tools',
      weight: 15,
      run: async () => ({ ...(await api('GET', `/api/v1/agents/${agent.id}/versions/latest/tools`, agentKey)), ok: [200] }),
    },
    { name: 'manifest', weight: 10, run: async () => ({ ...(await api('GET', `/api/v1/agents/${agent.id}/versions/latest/manifest`, agentKey)), ok: [200] }) },
    {
      name: 'search_knowledge',
      weight: 30,
      run: async () => ({
        ...(await api('POST', `/api/v1/agents/${agent.id}/tool-calls`, agentKey, {
          tool: 'search_knowledge',
          arguments: { query: `refunds ${n++ % 20}` },
          runId: `run-${Math.floor(n / 20)}`,
        })),
        ok: [200],
      }),
    },
    {
      name: 'remember + approve',
      weight: 10,
      run: async () => {
        const asked = await api('POST', `/api/v1/agents/${agent.id}/tool-calls`, agentKey, {
          tool: 'remember',
          arguments: { content: `fact ${randomBytes(6).toString('hex')}` },
        });
        if (asked.status !== 202) return { status: asked.status, ok: [202] };
        return { ...(await api('POST', `/api/v1/approvals/${asked.json.approvalId}/approve`, approver, {})), ok: [200] };
      },
    },
    { name: 'list tool calls', weight: 10, run: async () => ({ ...(await api('GET', `/api/v1/tool-calls?agentId=${agent.id}&limit=20`, viewer)), ok: [200] }) },
    {
      name: 'bad arguments',
      weight: 5,
      run: async () => ({
        ...(await api('POST', `/api/v1/agents/${agent.id}/tool-calls`, agentKey, { tool: 'search_knowledge', arguments: { query: 5 } })),
        ok: [422],
      }),
    },
    // Past RATE_LIMIT_AUTH_FAILURES in a window, failures are answered 429 (valid keys still pass).
    { name: 'unknown key', weight: 5, run: async () => ({ ...(await api('GET', '/api/v1/me', 'cpk_unknown')), ok: [401, 429] }) },
    {
      name: 'add document',
      weight: 5,
      run: async () => ({
        ...(await api('POST', `/api/v1/knowledge/collections/${collection.id}/documents`, builder, { title: 'Note', content: `note ${n}` })),
        ok: [201],
      }),
    },
  ];
  const totalWeight = steps.reduce((s, x) => s + x.weight, 0);
  const pick = () => {
    let r = Math.random() * totalWeight;
    for (const s of steps) if ((r -= s.weight) < 0) return s;
    return steps[0];
  };

  const counts = new Map<string, { done: number; unexpected: number; samples: string[] }>(steps.map((s) => [s.name, { done: 0, unexpected: 0, samples: [] }]));
  const memory: { t: number; rss: number }[] = [];
  const started = Date.now();
  const deadline = started + SECONDS * 1000;
  const sampler = setInterval(() => memory.push({ t: Math.round((Date.now() - started) / 1000), rss: rssMiB(child.pid!) }), 5000);
  memory.push({ t: 0, rss: rssMiB(child.pid!) });

  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < deadline) {
        const step = pick();
        const c = counts.get(step.name)!;
        try {
          const { status, ok } = await step.run();
          c.done++;
          if (!ok.includes(status)) {
            c.unexpected++;
            if (c.samples.length < 3) c.samples.push(String(status));
          }
        } catch (err) {
          c.done++;
          c.unexpected++;
          if (c.samples.length < 3) c.samples.push(String(err).slice(0, 120));
        }
      }
    }),
  );
  clearInterval(sampler);
  memory.push({ t: SECONDS, rss: rssMiB(child.pid!) });
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await database.drop();

  const total = [...counts.values()].reduce((s, c) => s + c.done, 0);
  const unexpected = [...counts.values()].reduce((s, c) => s + c.unexpected, 0);
  console.log(`\nsoak: ${SECONDS} s, ${CONCURRENCY} concurrent clients, ${process.env.DATABASE_URL ? 'PostgreSQL server' : 'embedded database'}`);
  console.log(`requests: ${total} (${Math.round(total / SECONDS)}/s), unexpected answers: ${unexpected}\n`);
  console.log('step'.padEnd(20), 'done'.padStart(8), 'unexpected'.padStart(11), ' samples');
  for (const [name, c] of counts) console.log(name.padEnd(20), String(c.done).padStart(8), String(c.unexpected).padStart(11), ' ', c.samples.join(', '));
  const warm = memory.find((m) => m.t >= 30) ?? memory[0];
  const last = memory[memory.length - 1];
  const max = Math.max(...memory.map((m) => m.rss));
  console.log(
    `\nserver RSS (MiB): start ${memory[0].rss}, after warm-up (${warm.t} s) ${warm.rss}, end ${last.rss}, max ${max}; growth after warm-up ${last.rss - warm.rss} MiB`,
  );
  console.log('samples:', memory.map((m) => `${m.t}s=${m.rss}`).join(' '));
  process.exit(unexpected > 0 ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
