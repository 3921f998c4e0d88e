import { randomBytes } from 'node:crypto';
import { startEmbeddedDatabase } from '../../src/database/embedded-database';
import { BenchDatabase, createBenchDatabase, serverVersion } from './database';
import { Api, expectStatus } from './http';
import { BenchOptions } from './options';
import { ServerProcess, startServer } from './server-process';
import { Unavailable } from './throughput';

/** A published agent with a read-only tool and a mutating one: what the product scenarios call. */
export interface BenchAgent {
  id: string;
  /** Read-only, cheap: the governed hot path with as little tool work as the builtins allow. */
  readOnlyTool: { name: string; arguments: Record<string, unknown> };
  /** Mutating: every call waits for an approval. */
  mutatingTool: { name: string; arguments: (n: number) => Record<string, unknown> };
}

export interface FloorTarget {
  server: ServerProcess;
  token: string;
}

export type KeyRole = 'viewer' | 'builder' | 'agent' | 'approver' | 'admin';

export interface ProductTarget {
  server: ServerProcess;
  db: BenchDatabase;
  adminToken: string;
  /** As the platform admin. */
  api: Api;
  org: { id: string; scopes: string[]; keys: Record<KeyRole, string>; keyIds: Record<KeyRole, string> };
  /**
   * Runs `work` on the product's database with a connection of the benchmark's own. On the
   * embedded database the server holds the data directory, so it is stopped for the work and
   * started again; on a server the work runs beside it.
   */
  withDatabase<T>(work: (url: string) => Promise<T>): Promise<T>;
}

/**
 * What one benchmark run holds: the servers it started and the databases it created, all started
 * lazily, shared by the scenarios that need them, and all stopped and dropped by `close()`.
 */
export class BenchSession {
  private readonly cleanups: (() => Promise<void>)[] = [];
  private barePromise?: Promise<ServerProcess>;
  private floorPromise?: Promise<FloorTarget>;
  private productPromise?: Promise<ProductTarget>;
  private agentPromise?: Promise<BenchAgent>;
  readonly notes: string[] = [];
  readonly servers: Record<string, { bootMs: number; rssBytes?: number }> = {};

  constructor(
    readonly options: BenchOptions,
    /** Which product to run: another checkout (bench/compare.ts), other environment variables. */
    readonly target: { root?: string; label?: string; env?: Record<string, string> } = {},
  ) {}

  get mode(): 'embedded' | 'postgres' {
    return this.options.databaseUrl ? 'postgres' : 'embedded';
  }

  defer(cleanup: () => Promise<void>): void {
    this.cleanups.push(cleanup);
  }

  async close(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        process.stderr.write(`cleanup failed: ${(err as Error).message}\n`);
      }
    }
  }

  async databaseVersion(): Promise<string> {
    if (!this.options.databaseUrl) return 'PGlite (embedded, PostgreSQL 18 in WebAssembly, pool of 1)';
    return `PostgreSQL ${await serverVersion(this.options.databaseUrl)} (pool of 10)`;
  }

  bare(): Promise<ServerProcess> {
    return (this.barePromise ??= this.track(startServer({ name: 'bare-fastify', script: 'bench/floor/bare-fastify.ts', env: {} })));
  }

  floor(): Promise<FloorTarget> {
    return (this.floorPromise ??= (async () => {
      const db = await createBenchDatabase('floor', this.options.databaseUrl);
      this.defer(() => db.drop());
      const token = 'floor_' + randomBytes(24).toString('base64url');
      const server = await this.track(startServer({ name: 'governed-floor', script: 'bench/floor/governed-floor.ts', env: { ...db.env, FLOOR_TOKEN: token } }));
      return { server, token };
    })());
  }

  product(): Promise<ProductTarget> {
    return (this.productPromise ??= (async () => {
      const db = await createBenchDatabase('product', this.options.databaseUrl);
      this.defer(() => db.drop());
      const adminToken = 'cpa_bench_' + randomBytes(24).toString('base64url');
      const env = {
        ...db.env,
        PLATFORM_ADMIN_TOKEN: adminToken,
        SECRETS_KEY: randomBytes(32).toString('base64'),
        LOG_LEVEL: this.options.serverLogLevel,
        // The limiter still counts every request (its cost is in every figure); it never refuses one.
        RATE_LIMIT_PER_KEY: '10000000',
        RATE_LIMIT_PER_ORG: '10000000',
        // The MCP servers of `wide-agent` answer on loopback, in the benchmark's process.
        EGRESS_ALLOWED_HOSTS: '127.0.0.1',
        ...this.target.env,
      };
      const start = async () => {
        const started = await startServer({ name: this.target.label ?? 'product', script: 'src/main.ts', root: this.target.root, env });
        this.servers[started.name] ??= { bootMs: started.bootMs };
        return started;
      };
      let server = await start();
      this.defer(async () => {
        this.servers[server.name].rssBytes = server.rss();
        await server.stop();
      });
      const target: ProductTarget = {
        server,
        db,
        adminToken,
        api: new Api(server.url, adminToken),
        org: await bootstrapOrg(new Api(server.url, adminToken)),
        withDatabase: async (work) => {
          if (db.url) return work(db.url);
          await server.stop();
          const embedded = await startEmbeddedDatabase(db.env.DATA_DIR);
          try {
            return await work(embedded.url);
          } finally {
            await embedded.stop();
            server = await start();
            target.server = server;
            target.api = new Api(server.url, adminToken);
          }
        },
      };
      return target;
    })());
  }

  /** Publishes the agent the product scenarios use (once per session). Throws Unavailable while the product lacks what it needs. */
  agent(): Promise<BenchAgent> {
    return (this.agentPromise ??= (async () => publishBenchAgent(await this.product()))());
  }

  /** Records a server's boot time and stops it when the session closes. */
  private async track(started: Promise<ServerProcess>): Promise<ServerProcess> {
    const server = await started;
    this.servers[server.name] = { bootMs: server.bootMs };
    this.defer(async () => {
      this.servers[server.name].rssBytes = server.rss();
      await server.stop();
    });
    return server;
  }
}

/** One organization holding every scope any capability needs, and one key per role. */
async function bootstrapOrg(admin: Api): Promise<ProductTarget['org']> {
  const catalog = expectStatus(await admin.get<{ items: { scopes: string[] }[] }>('/api/v1/agents/capabilities'), 200, 'catalog');
  const scopes = [...new Set(catalog.body.items.flatMap((c) => c.scopes))].sort();
  const org = expectStatus(
    await admin.post<{ id: string }>('/api/v1/orgs', { slug: `bench-${randomBytes(3).toString('hex')}`, name: 'Benchmark', scopes }),
    201,
    'create org',
  );
  const keys = {} as Record<KeyRole, string>;
  const keyIds = {} as Record<KeyRole, string>;
  for (const role of ['viewer', 'builder', 'agent', 'approver', 'admin'] as KeyRole[]) {
    const key = expectStatus(
      await admin.post<{ id: string; token: string }>(`/api/v1/orgs/${org.body.id}/api-keys`, { name: role, roles: [role] }),
      201,
      `create ${role} key`,
    );
    keys[role] = key.body.token;
    keyIds[role] = key.body.id;
  }
  return { id: org.body.id, scopes, keys, keyIds };
}

/**
 * The agent: `skills` with one bound skill (`list_skills`, read-only) and `memory-write`
 * (`remember`, mutating, so approved). Built through the product's own API, as a builder would.
 */
async function publishBenchAgent(product: ProductTarget): Promise<BenchAgent> {
  const needed = ['skills', 'memory-write'];
  const catalog = expectStatus(await product.api.get<{ items: { id: string }[] }>('/api/v1/agents/capabilities'), 200, 'catalog');
  const missing = needed.filter((id) => !catalog.body.items.some((c) => c.id === id));
  if (missing.length) throw new Unavailable(`the builtin capabilities ${missing.join(', ')} are not on this branch yet`);

  const builder = product.api.as(product.org.keys.builder);
  const skill = expectStatus(
    await builder.post<{ id: string }>('/api/v1/skills', {
      name: 'weekly-report',
      description: 'Use when asked for the weekly status report.',
      instructions: "Collect the week's merged changes, group them by team, and write three short paragraphs.",
    }),
    201,
    'create skill',
  );
  const agent = expectStatus(await builder.post<{ id: string }>('/api/v1/agents', { slug: 'bench-agent', name: 'Benchmark agent' }), 201, 'create agent');
  const path = `/api/v1/agents/${agent.body.id}`;
  expectStatus(
    await builder.put(`${path}/draft`, {
      instructions: 'You are the benchmark agent.',
      capabilities: [{ id: 'skills' }, { id: 'memory-write', config: { maxMemories: 100000 } }],
      resources: { skills: [skill.body.id] },
    }),
    200,
    'put draft',
  );
  const published = await builder.post(`${path}/publish`);
  if (published.status === 404 || published.status === 405) throw new Unavailable('publishing is not on this branch yet');
  expectStatus(published, 201, 'publish');
  return {
    id: agent.body.id,
    readOnlyTool: { name: 'list_skills', arguments: {} },
    mutatingTool: { name: 'remember', arguments: (n) => ({ content: `Benchmark fact number ${n}.`, tags: ['benchmark'] }) },
  };
}
