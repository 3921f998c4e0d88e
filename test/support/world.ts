import type { TestApp, TestOrg } from './test-app';
import { bearer, createOrg } from './test-app';

/**
 * A small world of real objects in one organization, so that attack suites can call every route
 * with ids that exist. Grows as the product grows: add the objects new routes take.
 */
export interface World {
  org: TestOrg;
  ids: Record<string, string>;
  /** A string written into every object of this world: it must never reach another tenant. */
  marker: string;
}

export async function createWorld(t: TestApp, scopes: string[] = [], marker = 'world'): Promise<World> {
  const org = await createOrg(t, scopes);
  const as = bearer(org.keys.admin);
  // A key of its own for routes that revoke keys, so the role keys stay usable.
  const spare = await t.http
    .post(`/api/v1/orgs/${org.id}/api-keys`)
    .set(...as)
    .send({ name: `${marker} spare`, roles: ['viewer'] });
  const ids: Record<string, string> = { orgId: org.id, keyId: spare.body.id, version: 'latest' };
  const agent = await t.http
    .post('/api/v1/agents')
    .set(...as)
    .send({ slug: `w-${org.slug}`.slice(0, 60), name: `${marker} agent`, description: marker });
  if (agent.status === 201) ids.agentId = agent.body.id;
  const collection = await t.http
    .post('/api/v1/knowledge/collections')
    .set(...as)
    .send({ name: `${marker} docs`, description: marker });
  if (collection.status === 201) {
    ids.collectionId = collection.body.id;
    const doc = await t.http
      .post(`/api/v1/knowledge/collections/${collection.body.id}/documents`)
      .set(...as)
      .send({ title: `${marker} refunds`, content: `${marker}: refunds are issued within 14 days.` });
    if (doc.status === 201) ids.docId = doc.body.id;
  }
  const skill = await t.http
    .post('/api/v1/skills')
    .set(...as)
    .send({ name: `${marker.toLowerCase().replace(/[^a-z0-9]/g, '')}-skill`, description: marker, instructions: `${marker}: do things well.` });
  if (skill.status === 201) ids.skillId = skill.body.id;
  const provider = await t.http
    .post('/api/v1/model-providers')
    .set(...as)
    .send({
      name: `${marker.toLowerCase().replace(/[^a-z0-9]/g, '')}-model`,
      kind: 'openai-compatible',
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: `sk-${marker}`,
    });
  if (provider.status === 201) ids.modelProviderId = provider.body.id;
  // Subscribed to a type the suites never cause for a live endpoint: no delivery writes rows behind their backs.
  const webhook = await t.http
    .post('/api/v1/webhooks')
    .set(...as)
    .send({ url: 'http://127.0.0.1:9/hook', types: ['webhook.deleted'], description: marker });
  if (webhook.status === 201) ids.webhookId = webhook.body.id;
  // The reference server over stdio: no network, no scope, and a process of its own per world.
  const connection = await t.http
    .post('/api/v1/mcp-connections')
    .set(...as)
    .send({ server: 'everything', name: `${marker.toLowerCase().replace(/[^a-z0-9]/g, '')}-mcp` });
  if (connection.status === 201) ids.connectionId = connection.body.id;
  return { org, ids, marker };
}

/** Fills a route's path parameters from the world; an id it does not know becomes a random UUID. */
export function fillPath(path: string, ids: Record<string, string>, fallback: () => string): string {
  return path.replace(/:(\w+)/g, (_m, name: string) => {
    if (ids[name]) return ids[name];
    // Names of code, not of tenant data: the same in every organization.
    if (name === 'capabilityId') return 'knowledge';
    if (name === 'toolId') return 'search_knowledge';
    if (name === 'id' && path.startsWith('/api/v1/knowledge/collections')) return ids.collectionId ?? fallback();
    if (name === 'id' && path.startsWith('/api/v1/skills')) return ids.skillId ?? fallback();
    if (name === 'id' && path.startsWith('/api/v1/model-providers')) return ids.modelProviderId ?? fallback();
    if (name === 'id' && path.startsWith('/api/v1/webhooks')) return ids.webhookId ?? fallback();
    if (name === 'id' && path.startsWith('/api/v1/mcp-connections')) return ids.connectionId ?? fallback();
    // A tool every `everything` connection lists (not an id: tools are named by their server).
    if (name === 'tool') return 'echo';
    return fallback();
  });
}

/** Row counts of every table of the product: "nothing written" means these do not move. */
export async function tableCounts(t: TestApp): Promise<Record<string, number>> {
  const { DataSource } = await import('typeorm');
  const ds = t.app.get(DataSource);
  const tables: { table_name: string }[] = await ds.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM "${table_name}"`);
    counts[table_name] = n;
  }
  return counts;
}

/**
 * A body for every route that reads one, valid enough that a refusal is about who is asking and
 * not about validation. Suites fail on a write route missing here: add one with every new route.
 */
export const VALID_BODIES: Record<string, unknown> = {
  'PUT /api/v1/agents/:agentId/draft': { instructions: 'x', capabilities: [] },
  'POST /api/v1/agents/:agentId/draft/validate': undefined,
  'POST /api/v1/agents/:agentId/publish': undefined,
  'POST /api/v1/knowledge/collections/:id/documents': { title: 't', content: 'c' },
  'POST /api/v1/orgs/:orgId/api-keys': { name: 'k', roles: ['viewer'] },
  'PUT /api/v1/orgs/:orgId/scopes': { scopes: [] },
  'PUT /api/v1/orgs/:orgId/api-key-policy': { maxLifetimeDays: null },
  'POST /api/v1/agents/:agentId/tool-calls': { tool: 'search_knowledge', arguments: { query: 'refunds' } },
  'POST /api/v1/approvals/:id/approve': {},
  'POST /api/v1/approvals/:id/reject': { reason: 'no' },
  'POST /api/v1/agents/:agentId/mcp': { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  // Tests allow loopback egress; nothing listens on port 9 and nothing is called when saving.
  'POST /api/v1/model-providers': { name: 'world-model', kind: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' },
  // Nothing listens at the world's provider: another key reaches no one.
  'PUT /api/v1/model-providers/:id/api-key': { apiKey: 'sk-world-replaced' },
  'POST /api/v1/agents/:agentId/runs': { input: 'hello' },
  'POST /api/v1/runs/:id/cancel': undefined,
  'POST /api/v1/webhooks': { url: 'http://127.0.0.1:9/hook', types: ['agent.created'] },
  // Nothing listens at the world's webhook: a new secret signs nothing anyone checks.
  'POST /api/v1/webhooks/:id/rotate-secret': {},
  'POST /api/v1/mcp-connections': { server: 'everything', name: 'world-extra-mcp' },
  'POST /api/v1/mcp-connections/:id/sync': undefined,
  'PUT /api/v1/mcp-connections/:id/tools/:tool/risk': { risk: 'read_only' },
  'PUT /api/v1/mcp-connections/:id/credentials': { credentials: {} },
  // The world's connection is the reference server, whose address the catalog fixes: refused (400), nothing changed.
  'PUT /api/v1/mcp-connections/:id/url': { url: 'http://127.0.0.1:9/mcp' },
  // Enabling an enabled tool changes nothing; retiring `latest` is refused (409): neither disturbs the world.
  'PUT /api/v1/tools/:capabilityId/:toolId/disabled': { disabled: false },
  'POST /api/v1/agents/:agentId/versions/:version/retire': undefined,
};

export function validBody(method: string, path: string): { known: boolean; body: unknown } {
  const key = `${method} ${path}`;
  return { known: key in VALID_BODIES, body: VALID_BODIES[key] };
}
