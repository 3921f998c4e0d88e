import { Injectable, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { McpServerEntryAccessor } from './mcp-server-entry.accessor';
import { McpServerEntry } from './mcp-server-entry.decorator';
import { McpServerEntryExplorer } from './mcp-server-entry.explorer';
import type { McpServerEntryDefinition } from './mcp-server-entry.types';
import { checkEntry, McpCatalogRegistrationError, McpServerRegistry } from './mcp-server-registry.service';
import { EverythingEntryModule } from './entries/everything/everything.module';
import { RemoteEntryModule } from './entries/remote/remote.module';

const remote: McpServerEntryDefinition = {
  id: 'vendor',
  name: 'Vendor',
  category: 'crm',
  description: 'A vendor.',
  transport: 'streamable-http',
  url: 'https://mcp.vendor.example/mcp',
  credentials: [{ name: 'token', description: 'API token', required: true, header: 'Authorization' }],
  scopes: ['crm:read'],
  trustAnnotations: false,
};

async function registryWith(...entries: object[]): Promise<McpServerRegistry> {
  @Module({ imports: [DiscoveryModule], providers: [...(entries as never[]), McpServerEntryAccessor, McpServerEntryExplorer, McpServerRegistry] })
  class Harness {}
  const moduleRef = await Test.createTestingModule({ imports: [Harness] }).compile();
  const registry = moduleRef.get(McpServerRegistry);
  registry.onModuleInit();
  return registry;
}

function entry(definition: McpServerEntryDefinition, name = 'E') {
  @McpServerEntry(definition)
  @Injectable()
  class Decorated {}
  Object.defineProperty(Decorated, 'name', { value: name });
  return Decorated;
}

describe('McpServerRegistry', () => {
  it('discovers the shipped entries at boot, sorted, with their stdio command resolved', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DiscoveryModule, EverythingEntryModule, RemoteEntryModule],
      providers: [McpServerEntryAccessor, McpServerEntryExplorer, McpServerRegistry],
    }).compile();
    const registry = moduleRef.get(McpServerRegistry);
    registry.onModuleInit();
    expect(registry.all().map((e) => e.definition.id)).toEqual(['everything', 'remote']);
    const everything = registry.get('everything')!;
    expect(everything.command).toEqual({ command: process.execPath, args: [expect.stringMatching(/server-everything[\\/]dist[\\/]index\.js$/), 'stdio'] });
    expect(registry.get('remote')!.descriptor).toMatchObject({ urlRequired: true, trustAnnotations: false, scopes: ['mcp:remote'] });
    expect(registry.get('nope')).toBeUndefined();
  });

  it('a fixed-URL vendor entry needs no URL from the connection', async () => {
    const registry = await registryWith(entry(remote));
    expect(registry.get('vendor')!.descriptor).toMatchObject({
      urlRequired: false,
      credentials: [{ name: 'token', description: 'API token', required: true }],
    });
  });

  it('refuses the boot on a duplicate id, naming both', async () => {
    await expect(registryWith(entry(remote, 'A'), entry(remote, 'B'))).rejects.toThrow(/B \("vendor"\)|declared twice/);
  });

  it('refuses a stdio package that is not installed', async () => {
    const broken: McpServerEntryDefinition = {
      ...remote,
      id: 'local',
      transport: 'stdio',
      url: undefined,
      credentials: [],
      stdio: { package: 'no-such-package-xyz', script: 'index.js', args: [] },
    };
    await expect(registryWith(entry(broken, 'Local'))).rejects.toThrow(McpCatalogRegistrationError);
    await expect(registryWith(entry(broken, 'Local'))).rejects.toThrow(/not installed/);
  });

  it.each<[string, Partial<McpServerEntryDefinition>, RegExp]>([
    ['a bad id', { id: 'Bad_Id' }, /id must match/],
    ['no description', { description: ' ' }, /description is required/],
    ['an unknown transport', { transport: 'sse' as never }, /transport must be/],
    ['trustAnnotations left out', { trustAnnotations: undefined as never }, /trustAnnotations must be declared/],
    ['a bad scope', { scopes: ['Not A Scope'] }, /scopes/],
    ['a plain http vendor URL', { url: 'http://vendor.example/mcp' }, /https/],
    ['a credential in a transport header', { credentials: [{ name: 'x', description: 'd', required: false, header: 'Mcp-Session-Id' }] }, /header/],
    ['a credential with no header', { credentials: [{ name: 'x', description: 'd', required: false }] }, /header/],
    ['a credential declared twice', { credentials: [remote.credentials[0], remote.credentials[0]] }, /declared twice/],
    ['a stdio block on an HTTP entry', { stdio: { package: 'p', script: 's', args: [] } }, /stdio is for stdio entries/],
  ])('refuses %s', (_what, change, message) => {
    expect(checkEntry({ ...remote, ...change }, 'E').join('\n')).toMatch(message);
  });

  it.each<[string, Partial<McpServerEntryDefinition>, RegExp]>([
    ['a URL', { url: 'https://x.example' }, /no url/],
    ['no launch', { stdio: undefined }, /declares stdio/],
    ['a script outside the package', { stdio: { package: 'p', script: '../../etc/x.js', args: [] } }, /inside the package/],
    ['an absolute script', { stdio: { package: 'p', script: '/bin/sh', args: [] } }, /inside the package/],
    ['a bad env name', { stdio: { package: 'p', script: 's.js', args: [], env: { 'bad-name': 'x' } } }, /not a variable name/],
    ['a credential without env', { credentials: [{ name: 'x', description: 'd', required: true }] }, /environment variable/],
  ])('refuses a stdio entry with %s', (_what, change, message) => {
    const stdio: McpServerEntryDefinition = {
      ...remote,
      transport: 'stdio',
      url: undefined,
      credentials: [],
      stdio: { package: 'p', script: 's.js', args: [] },
    };
    expect(checkEntry({ ...stdio, ...change }, 'E').join('\n')).toMatch(message);
  });

  it('refuses a missing declaration', () => {
    expect(checkEntry(undefined, 'E')).toEqual(['E: @McpServerEntry() needs a declaration']);
  });
});
