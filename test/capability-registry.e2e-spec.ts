import { join } from 'node:path';
import { createApp } from '../src/app.factory';
import { CapabilityRegistry } from '../src/capabilities/capability-registry.service';
import { buildContext } from './fixtures/build-context';
import { baseDefinition, capabilityClass, moduleOf } from './fixtures/capability-factory';
import { checkBuiltinLayout } from './support/capability-layout';
import { strictAjv } from './support/json-schema';
import { createTestApp, TestApp, testConfig } from './support/test-app';
import { createTestDatabase } from './support/test-database';

/**
 * The builtin capability set as the application boots it (with its database, since builtin
 * modules may need one): its permission snapshot, its drift, its schemas and its layout.
 */
describe('builtin capability registry (e2e)', () => {
  let t: TestApp;
  let registry: CapabilityRegistry;
  beforeAll(async () => {
    t = await createTestApp();
    registry = t.app.get(CapabilityRegistry);
  });
  afterAll(() => t.close());

  /**
   * A change to this snapshot is a permission change: review it as one (who may now do what,
   * with or without a human in the loop). Update it with `npx jest test/capability-registry -u`.
   */
  it('matches the reviewed permission snapshot', () => {
    const snapshot = Object.fromEntries(
      registry.all().map((c) => [
        c.definition.id,
        {
          scopes: [...(c.definition.scopes ?? [])],
          tools: Object.fromEntries(
            c.tools.map((tool) => [
              tool.declaration.id,
              { risk: tool.declaration.risk, requiresApproval: tool.requiresApproval, interruptBefore: tool.declaration.interruptBefore ?? false },
            ]),
          ),
        },
      ]),
    );
    expect(snapshot).toMatchSnapshot();
  });

  it('builds every capability with a representative context into exactly its declared tools (drift)', async () => {
    for (const capability of registry.all()) {
      const id = capability.definition.id;
      const { value: config, errors } = registry.validateConfig(id, {});
      expect({ id, errors }).toEqual({ id, errors: [] });
      const built = await registry.build(id, buildContext(config, [...(capability.definition.scopes ?? [])]));
      const declared = capability.tools.map((tool) => tool.declaration.id);
      // A capability with tools that contributes nothing even here could never be checked: make the context more representative instead.
      if (declared.length > 0) expect({ id, built: built !== null }).toEqual({ id, built: true });
      expect({ id, offered: (built?.tools ?? []).map((tool) => tool.id).sort() }).toEqual({ id, offered: built ? [...declared].sort() : [] });
    }
  });

  it('serves schemas that compile in ajv strict mode (draft 2020-12), and whose defaults pass them', () => {
    const ajv = strictAjv();
    for (const descriptor of registry.catalog()) {
      const config = ajv.compile(descriptor.configSchema);
      expect({ id: descriptor.id, valid: config(registry.validateConfig(descriptor.id, {}).value), errors: config.errors }).toEqual({
        id: descriptor.id,
        valid: true,
        errors: null,
      });
      expect(config({ notAField: true })).toBe(false);
      for (const tool of descriptor.tools) {
        expect(tool.inputSchema).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', additionalProperties: false });
        expect(() => ajv.compile(tool.inputSchema)).not.toThrow();
      }
    }
  });

  it('follows the folder layout, with every folder imported and registered', () => {
    const registered = registry.all().map((c) => ({ id: c.definition.id, toolCount: c.tools.length }));
    expect(checkBuiltinLayout(join(__dirname, '..', 'src'), registered)).toEqual([]);
  });
});

describe('a malformed capability set (e2e)', () => {
  it('stops the application from starting, naming the culprit', async () => {
    const db = await createTestDatabase();
    const config = testConfig({ databaseUrl: db.real ? db.url : undefined });
    const broken = moduleOf(capabilityClass({ ...baseDefinition(), description: '' }, { className: 'Broken' }));
    const app = await createApp({ config, database: { url: db.url, poolSize: db.poolSize }, imports: [broken], logger: false });
    try {
      await expect(app.init()).rejects.toThrow('capability "fixture-probe" (Broken): description must be a non-empty string');
    } finally {
      await app.close();
      await db.drop();
    }
  });
});
