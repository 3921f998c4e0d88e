import 'reflect-metadata';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createApp } from '../../src/app.factory';
import { resolveConfig } from '../../src/config/resolve-config';
import { runMigrations } from '../../src/database/database';
import { startEmbeddedDatabase } from '../../src/database/embedded-database';
import { createBenchDatabase } from '../lib/database';
import { Api, expectStatus } from '../lib/http';
import { median, percentile } from '../lib/load';
import { benchOptions } from '../lib/options';
import { fixed, printTable, Table } from '../lib/report';
import { syntheticCapabilityId, syntheticCapabilityModules, SYNTHETIC_SCOPE } from './synthetic-capabilities';

export interface PublishSize {
  capabilities: number;
  tools: number;
  specBytes: number;
  validateMedianMs: number;
  validateP90Ms: number;
  publishMedianMs: number;
  publishP90Ms: number;
  offeredToolsMedianMs: number;
}

export const SPEC_SIZES = [1, 10, 100];

/**
 * Publish-time validation as the spec grows: the whole application, in this process, with the
 * synthetic capabilities registered (a server process cannot take modules from outside, and must
 * not: capabilities exist only in code), on a database of its own. Requests go over loopback HTTP,
 * one at a time, so each figure is one request's latency with nothing else running.
 */
export async function measurePublishValidation(sizes = SPEC_SIZES, repeats = { validate: 15, publish: 8, tools: 15 }): Promise<PublishSize[]> {
  const options = benchOptions();
  const largest = Math.max(...sizes);
  const db = await createBenchDatabase('publish', options.databaseUrl);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-publish-'));
  const embedded = db.url ? undefined : await startEmbeddedDatabase(join(dataDir, 'db'));
  let app: NestFastifyApplication | undefined;
  try {
    const url = db.url ?? embedded!.url;
    await runMigrations(url);
    const adminToken = 'cpa_bench_' + randomBytes(24).toString('base64url');
    const config = resolveConfig({
      PLATFORM_ADMIN_TOKEN: adminToken,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_ORG: '0',
      ...(db.url ? { DATABASE_URL: db.url } : {}),
    });
    app = await createApp({
      config,
      database: { url, poolSize: db.url ? config.databasePoolSize : 1 },
      imports: syntheticCapabilityModules(largest),
      logger: false,
    });
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address() as { port: number };
    const admin = new Api(`http://127.0.0.1:${address.port}`, adminToken);

    const org = expectStatus(
      await admin.post('/api/v1/orgs', { slug: `publish-${randomBytes(3).toString('hex')}`, name: 'Publish', scopes: [SYNTHETIC_SCOPE] }),
      201,
      'create org',
    );
    const key = expectStatus(await admin.post(`/api/v1/orgs/${org.body.id}/api-keys`, { name: 'builder', roles: ['builder'] }), 201, 'create key');
    const builder = admin.as(key.body.token);

    const out: PublishSize[] = [];
    for (const size of sizes) {
      process.stderr.write(`[bench] publish validation with ${size} capabilities\n`);
      const agent = expectStatus(await builder.post('/api/v1/agents', { slug: `spec-${size}`, name: `Spec of ${size}` }), 201, 'create agent');
      const path = `/api/v1/agents/${agent.body.id}`;
      const draft = (n: number) => ({
        instructions: `Benchmark agent, revision ${n}.`,
        capabilities: Array.from({ length: size }, (_, i) => ({ id: syntheticCapabilityId(i + 1), config: { mode: 'thorough', maxResults: 7 } })),
      });
      expectStatus(await builder.put(`${path}/draft`, draft(0)), 200, 'put draft');
      const validate = await timed(repeats.validate, async () => {
        const res = expectStatus(await builder.post(`${path}/draft/validate`), 200, 'validate');
        if (!res.body.valid) throw new Error(`the synthetic spec is invalid: ${JSON.stringify(res.body.errors).slice(0, 300)}`);
      });
      const publish: number[] = [];
      for (let n = 1; n <= repeats.publish; n++) {
        expectStatus(await builder.put(`${path}/draft`, draft(n)), 200, 'put draft');
        const t = performance.now();
        expectStatus(await builder.post(`${path}/publish`), 201, 'publish');
        publish.push(performance.now() - t);
      }
      const tools = await timed(repeats.tools, async () => {
        expectStatus(await builder.get(`${path}/versions/latest/tools`), 200, 'offered tools');
      });
      out.push({
        capabilities: size,
        tools: size * 2,
        specBytes: JSON.stringify(draft(0)).length,
        validateMedianMs: median(validate),
        validateP90Ms: percentile(
          [...validate].sort((a, b) => a - b),
          90,
        ),
        publishMedianMs: median(publish),
        publishP90Ms: percentile(
          [...publish].sort((a, b) => a - b),
          90,
        ),
        offeredToolsMedianMs: median(tools),
      });
    }
    return out;
  } finally {
    await app?.close();
    await embedded?.stop();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function timed(times: number, fn: () => Promise<void>): Promise<number[]> {
  await fn(); // first call: JIT and caches, not counted
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

export function publishTable(sizes: readonly PublishSize[]): Table {
  return {
    title: 'Publish validation: specs of N synthetic capabilities (registry of the largest N, in-process app, one request at a time)',
    columns: ['capabilities', 'tools', 'spec KiB', 'validate p50 ms', 'validate p90 ms', 'publish p50 ms', 'publish p90 ms', 'offered tools p50 ms'],
    rows: sizes.map((s) => [
      s.capabilities,
      s.tools,
      fixed(s.specBytes / 1024, 1),
      fixed(s.validateMedianMs, 1),
      fixed(s.validateP90Ms, 1),
      fixed(s.publishMedianMs, 1),
      fixed(s.publishP90Ms, 1),
      fixed(s.offeredToolsMedianMs, 1),
    ]),
    notes: [
      'validate: POST /agents/{id}/draft/validate (registry lookups, each config validated, scopes, resources).',
      'publish: POST /agents/{id}/publish of a changed draft (validate + build every capability + digests + one transaction).',
      'offered tools: GET /agents/{id}/versions/latest/tools (the version built for the organization).',
    ],
  };
}

if (require.main === module) {
  measurePublishValidation()
    .then((sizes) => printTable(publishTable(sizes)))
    .then(() => process.exit(0))
    .catch((err: unknown) => {
      process.stderr.write(`${(err as Error).stack}\n`);
      process.exit(1);
    });
}
