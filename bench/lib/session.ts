import { randomBytes } from 'node:crypto';
import { BenchDatabase, createBenchDatabase, serverVersion } from './database';
import { Api, expectStatus } from './http';
import { BenchOptions } from './options';
import { ServerProcess, startServer } from './server-process';

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
  org: { id: string; scopes: string[]; keys: Record<KeyRole, string> };
  /** Restarts the server on the same database (the embedded database cannot be opened while it runs). */
  restart(): Promise<void>;
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
  readonly notes: string[] = [];
  readonly servers: Record<string, { bootMs: number; rssBytes?: number }> = {};

  constructor(readonly options: BenchOptions) {}

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
      const env = { ...db.env, PLATFORM_ADMIN_TOKEN: adminToken, LOG_LEVEL: this.options.serverLogLevel };
      const start = async () => {
        const started = await startServer({ name: 'product', script: 'src/main.ts', env });
        this.servers.product ??= { bootMs: started.bootMs };
        return started;
      };
      let server = await start();
      this.defer(async () => {
        this.servers.product.rssBytes = server.rss();
        await server.stop();
      });
      const target: ProductTarget = {
        server,
        db,
        adminToken,
        api: new Api(server.url, adminToken),
        org: await bootstrapOrg(new Api(server.url, adminToken)),
        restart: async () => {
          await server.stop();
          server = await start();
          target.server = server;
          target.api = new Api(server.url, adminToken);
        },
      };
      return target;
    })());
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
  const org = expectStatus(await admin.post<{ id: string }>('/api/v1/orgs', { slug: `bench-${randomBytes(3).toString('hex')}`, name: 'Benchmark', scopes }), 201, 'create org');
  const keys = {} as Record<KeyRole, string>;
  for (const role of ['viewer', 'builder', 'agent', 'approver', 'admin'] as KeyRole[]) {
    const key = expectStatus(await admin.post<{ token: string }>(`/api/v1/orgs/${org.body.id}/api-keys`, { name: role, roles: [role] }), 201, `create ${role} key`);
    keys[role] = key.body.token;
  }
  return { id: org.body.id, scopes, keys };
}
