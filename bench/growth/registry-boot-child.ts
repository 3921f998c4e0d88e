import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { NestFactory } from '@nestjs/core';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { CapabilitiesModule } from '../../src/capabilities/capabilities.module';
import { catalogView } from '../../src/capabilities/capability-catalog';
import { CapabilityRegistry } from '../../src/capabilities/capability-registry.service';
import { CapabilityExplorer } from '../../src/capabilities/capability.explorer';
import { validateWithClass } from '../../src/capabilities/class-validation';
import { syntheticCapabilityModules, SYNTHETIC_SCOPE } from './synthetic-capabilities';
import { median } from '../lib/load';

/** A tool input like any other, validated the same way at every size: what one validation costs. */
class ProbeInput {
  @IsString()
  @MaxLength(200)
  query: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(20)
  limit: number = 5;
}

/**
 * One size of the registry growth benchmark, in a process of its own so that its memory is its
 * own: `node --expose-gc -r @swc-node/register bench/growth/registry-boot-child.ts <count>`.
 * Prints one JSON line.
 */
async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 0);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  const before = process.memoryUsage();

  const modules = syntheticCapabilityModules(count);
  // Some builtins' tools take the DataSource; building the registry never uses it, so one that
  // never connects will do: this measures the capability framework, not a database.
  @Global()
  @Module({ providers: [{ provide: DataSource, useValue: new DataSource({ type: 'postgres' }) }], exports: [DataSource] })
  class NoDatabaseModule {}
  @Module({ imports: [NoDatabaseModule, CapabilitiesModule, ...modules] })
  class RegistryBenchModule {}

  const started = performance.now();
  const app = await NestFactory.createApplicationContext(RegistryBenchModule, { logger: false, abortOnError: false });
  await app.init();
  const bootMs = performance.now() - started;
  gc();
  const after = process.memoryUsage();

  // The registry's own work (explore, check, generate every schema, build the catalog), apart
  // from Nest's: a fresh registry over the same providers, timed a few times.
  const explorer = app.get(CapabilityExplorer);
  const loads: number[] = [];
  for (let i = 0; i < (count >= 1000 ? 1 : 3); i++) {
    const t = performance.now();
    new CapabilityRegistry(explorer).catalog();
    loads.push(performance.now() - t);
  }

  // What the catalog route does per request: the caller's view (with `available`), its JSON and its ETag.
  const registry = app.get(CapabilityRegistry);
  const requestTimes: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 50; i++) {
    const t = performance.now();
    const body = JSON.stringify({ items: catalogView(registry.catalog(), {}, [SYNTHETIC_SCOPE]) });
    createHash('sha256').update(body).digest('base64url');
    requestTimes.push(performance.now() - t);
    bytes = body.length;
  }
  // class-validator looked for inherited rules by walking every class it knows, so one validation
  // cost more as the process held more validated classes (each capability brings three); the
  // index in src/common/validation-metadata-index.ts made it independent of them: this shows it.
  const validations: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    validateWithClass(ProbeInput, { query: 'benchmark', limit: 3 });
    validations.push(performance.now() - t);
  }
  await app.close();
  process.stdout.write(
    JSON.stringify({
      count,
      capabilities: registry.catalog().length,
      bootMs,
      registryLoadMs: median(loads),
      heapDeltaBytes: after.heapUsed - before.heapUsed,
      rssBytes: after.rss,
      catalogBytes: bytes,
      catalogRequestMs: median(requestTimes),
      validationMs: median(validations),
    }) + '\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
