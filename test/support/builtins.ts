import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { CapabilityRegistry } from '../../src/capabilities/capability-registry.service';
import type { BuildContext, ResolvedResources, StampedContribution, ToolContext } from '../../src/capabilities/capability.types';
import { ToolError } from '../../src/capabilities/capability.types';
import { KnowledgeRepository } from '../../src/knowledge/knowledge.repository';
import { SkillsRepository } from '../../src/skills/skills.repository';
import { EffectWrites, NO_EFFECTS } from '../../src/runtime/run-tool';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './test-app';

/**
 * Helpers for the builtin capability tests: build a capability through the registry with the
 * resources resolved from the database as the product resolves them, and run its tools directly
 * with arguments validated by the declared input class, the way the executor does.
 */

export interface TestAgent {
  id: string;
  slug: string;
  name: string;
}

export async function createAgent(t: TestApp, org: TestOrg, slug = `agent-${randomUUID().slice(0, 8)}`): Promise<TestAgent> {
  const res = await t.http
    .post('/api/v1/agents')
    .set(...bearer(org.keys.builder))
    .send({ slug, name: `Agent ${slug}` })
    .expect(201);
  return { id: res.body.id, slug, name: res.body.name };
}

export async function createCollection(t: TestApp, org: TestOrg, name: string, description?: string): Promise<string> {
  const res = await t.http
    .post('/api/v1/knowledge/collections')
    .set(...bearer(org.keys.builder))
    .send({ name, description })
    .expect(201);
  return res.body.id;
}

export async function addDocument(t: TestApp, org: TestOrg, collectionId: string, title: string, content: string): Promise<string> {
  const res = await t.http
    .post(`/api/v1/knowledge/collections/${collectionId}/documents`)
    .set(...bearer(org.keys.builder))
    .send({ title, content })
    .expect(201);
  return res.body.id;
}

export async function createSkill(t: TestApp, org: TestOrg, name: string, description: string, instructions: string): Promise<string> {
  const res = await t.http
    .post('/api/v1/skills')
    .set(...bearer(org.keys.builder))
    .send({ name, description, instructions })
    .expect(201);
  return res.body.id;
}

/** Resolves the ids as the version builder does: for the organization, in the order given. */
export async function resolveResources(
  t: TestApp,
  orgId: string,
  ids: { knowledgeCollections?: string[]; skills?: string[] } = {},
): Promise<ResolvedResources> {
  return {
    knowledgeCollections: await t.app.get(KnowledgeRepository).resolve(orgId, ids.knowledgeCollections ?? []),
    skills: await t.app.get(SkillsRepository).resolve(orgId, ids.skills ?? []),
  };
}

export function contextFor(
  org: { id: string; scopes?: string[] },
  agent: TestAgent,
  config: unknown,
  resources: ResolvedResources = { knowledgeCollections: [], skills: [] },
): BuildContext {
  return { org: { id: org.id, scopes: org.scopes ?? [] }, agent: { ...agent, version: 1 }, config, resources };
}

export function toolContext(orgId: string, agentId: string, overrides: Partial<ToolContext> = {}): ToolContext {
  // No deadline outside runTool; a tool that writes is given `effect: ownTransactions(ds)`.
  return { orgId, agentId, version: 1, callId: randomUUID(), runId: null, signal: new AbortController().signal, effect: NO_EFFECTS.run, ...overrides };
}

/**
 * Where a tool tested on its own writes: each write in a transaction of its own, committed as soon
 * as it returns (there is no call to settle with it). The shape of runTool's `effects`.
 */
export function ownTransactions(ds: DataSource): EffectWrites & Pick<ToolContext, 'effect'> {
  const run = <T>(write: (db: EntityManager) => Promise<T>) => ds.transaction(write);
  return { run, effect: run };
}

/** Validates the config as publish does (defaults filled in) and builds the capability with it. */
export async function buildWith(registry: CapabilityRegistry, capabilityId: string, ctx: BuildContext): Promise<StampedContribution | null> {
  const { value, errors } = registry.validateConfig(capabilityId, ctx.config);
  if (errors.length > 0) throw new Error(`invalid config for ${capabilityId}: ${JSON.stringify(errors)}`);
  return registry.build(capabilityId, { ...ctx, config: value });
}

/** Runs one built tool with arguments validated against its declared input class; they must be valid. */
export async function callTool(registry: CapabilityRegistry, built: StampedContribution | null, toolId: string, args: unknown, ctx: ToolContext): Promise<any> {
  if (!built) throw new Error('the capability contributed nothing');
  const tool = built.tools.find((x) => x.id === toolId);
  if (!tool) throw new Error(`no built tool ${toolId}`);
  const { value, errors } = registry.validateToolInput(built.capabilityId, toolId, args);
  if (errors.length > 0) throw new Error(`invalid arguments for ${toolId}: ${JSON.stringify(errors)}`);
  return tool.execute(value, ctx);
}

/** The ToolError a call fails with (and fails the test when it succeeds or throws anything else). */
export async function toolError(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ToolError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('the tool succeeded; a ToolError was expected');
}

/** The error paths of a tool input, as the executor reports them in `422 invalid_arguments`. */
export function inputErrors(registry: CapabilityRegistry, capabilityId: string, toolId: string, args: unknown): string[] {
  return [...new Set(registry.validateToolInput(capabilityId, toolId, args).errors.map((e) => e.path))].sort();
}

/** The error paths of a config, as publish reports them under `capabilities[i].config`. */
export function configErrors(registry: CapabilityRegistry, capabilityId: string, config: unknown): string[] {
  return [...new Set(registry.validateConfig(capabilityId, config).errors.map((e) => e.path))].sort();
}

/** memory and memory-write built for one agent, and its tool context: the pair the memory tests drive. */
export async function memoryTools(t: TestApp, o: TestOrg, a: TestAgent, config: { memory?: object; write?: object } = {}) {
  const registry = t.app.get(CapabilityRegistry);
  const recall = await buildWith(registry, 'memory', contextFor(o, a, config.memory ?? {}));
  const write = await buildWith(registry, 'memory-write', contextFor(o, a, config.write ?? {}));
  const writes = ownTransactions(t.app.get(DataSource));
  /** A context whose writes commit at once; `overrides` as toolContext's. */
  const context = (orgId: string, agentId: string, overrides: Partial<ToolContext> = {}) =>
    toolContext(orgId, agentId, { effect: writes.effect, ...overrides });
  const tc = context(o.id, a.id);
  return {
    tc,
    context,
    writes,
    recall: (query: string, limit?: number, ctx: ToolContext = tc) =>
      callTool(registry, recall, 'recall_memories', limit === undefined ? { query } : { query, limit }, ctx),
    remember: (content: string, tags?: string[], ctx: ToolContext = tc) =>
      callTool(registry, write, 'remember', tags === undefined ? { content } : { content, tags }, ctx),
    forget: (memoryId: string, ctx: ToolContext = tc) => callTool(registry, write, 'forget', { memoryId }, ctx),
    built: { recall, write } as { recall: StampedContribution | null; write: StampedContribution | null },
  };
}

/**
 * The harness of a tool-less builtin's tests (thinking, budget, compaction): an app, an org with an
 * agent, the catalog as a viewer reads it, and `build(id, config)`; and the test every one of them
 * shares, that it offers no tools and needs no scope.
 */
export function toollessBuiltin(id: string) {
  const h = {} as {
    t: TestApp;
    registry: CapabilityRegistry;
    catalog: Record<string, any>;
    build: (capabilityId: string, config?: object) => Promise<StampedContribution | null>;
  };
  beforeAll(async () => {
    h.t = await createTestApp();
    h.registry = h.t.app.get(CapabilityRegistry);
    const org = await createOrg(h.t);
    const agent = await createAgent(h.t, org);
    const res = await h.t.http
      .get('/api/v1/agents/capabilities')
      .set(...bearer(org.keys.viewer))
      .expect(200);
    h.catalog = Object.fromEntries(res.body.items.map((i: { id: string }) => [i.id, i]));
    h.build = (capabilityId, config = {}) => buildWith(h.registry, capabilityId, contextFor(org, agent, config));
  });
  afterAll(() => h.t.close());

  it('has no tools and needs no scope', () => {
    expect(h.catalog[id]).toMatchObject({ tools: [], scopes: [], available: true, risk: 'read_only', sideEffecting: false });
  });
  return h;
}
