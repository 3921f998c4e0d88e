import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, parseEnvironment } from './app-config';
import { resolveConfig } from './resolve-config';

describe('environment', () => {
  it('applies the documented defaults', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const config = resolveConfig({ DATA_DIR: dir });
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      dataDir: dir,
      approvalTtlSeconds: 86400,
      logLevel: 'info',
      toolTimeoutMs: 30000,
      mcpApprovalWaitSeconds: 45,
      mcpHeldCallsPerOrg: 64,
    });
    expect(config.databaseUrl).toBeUndefined();
  });

  it('keeps finished webhook deliveries a week unless told otherwise, in days', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).webhookDeliveryRetentionMs).toBe(7 * 86_400_000);
    expect(resolveConfig({ DATA_DIR: dir, WEBHOOK_DELIVERY_RETENTION_DAYS: ' 30 ' }).webhookDeliveryRetentionMs).toBe(30 * 86_400_000);
    expect(resolveConfig({ DATA_DIR: dir, WEBHOOK_DELIVERY_RETENTION_DAYS: '1' }).webhookDeliveryRetentionMs).toBe(86_400_000);
    expect(resolveConfig({ DATA_DIR: dir, WEBHOOK_DELIVERY_RETENTION_DAYS: '365' }).webhookDeliveryRetentionMs).toBe(365 * 86_400_000);
  });

  it('keeps audit events for good unless told a number of days, at least what a webhook delivery of one may be listed', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).auditRetentionMs).toBe(0);
    expect(resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '0' }).auditRetentionMs).toBe(0);
    expect(resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '400' }).auditRetentionMs).toBe(400 * 86_400_000);
    // A week of finished deliveries, retried for a day before they finish.
    expect(resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '8' }).auditRetentionMs).toBe(8 * 86_400_000);
    expect(() => resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '7' })).toThrow(/AUDIT_RETENTION_DAYS: 7 keeps an event less long .* 8 days/);
    expect(
      resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '2', WEBHOOK_DELIVERY_RETENTION_DAYS: '1', WEBHOOK_RETRY_WINDOW_SECONDS: '3600' }).auditRetentionMs,
    ).toBe(2 * 86_400_000);
    expect(() => resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '-1' })).toThrow(/AUDIT_RETENTION_DAYS/);
    expect(() => resolveConfig({ DATA_DIR: dir, AUDIT_RETENTION_DAYS: '1.5' })).toThrow(/AUDIT_RETENTION_DAYS/);
  });

  it('tells an organization of an expiring API key a week ahead unless told otherwise, in days (0: only when it expired)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).apiKeyExpiryNoticeMs).toBe(7 * 86_400_000);
    expect(resolveConfig({ DATA_DIR: dir, API_KEY_EXPIRY_NOTICE_DAYS: '0' }).apiKeyExpiryNoticeMs).toBe(0);
    expect(resolveConfig({ DATA_DIR: dir, API_KEY_EXPIRY_NOTICE_DAYS: '30' }).apiKeyExpiryNoticeMs).toBe(30 * 86_400_000);
    expect(() => resolveConfig({ DATA_DIR: dir, API_KEY_EXPIRY_NOTICE_DAYS: '366' })).toThrow(/API_KEY_EXPIRY_NOTICE_DAYS/);
    expect(() => resolveConfig({ DATA_DIR: dir, API_KEY_EXPIRY_NOTICE_DAYS: '-1' })).toThrow(/API_KEY_EXPIRY_NOTICE_DAYS/);
  });

  it("fails a run after 64 of its model's calls were refused unless told otherwise (1 to 100,000)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).runs.maxRefusedCalls).toBe(64);
    expect(resolveConfig({ DATA_DIR: dir, RUN_MAX_REFUSED_CALLS: '500' }).runs.maxRefusedCalls).toBe(500);
    for (const bad of ['0', '100001', '2.5', 'none']) {
      expect(() => resolveConfig({ DATA_DIR: dir, RUN_MAX_REFUSED_CALLS: bad })).toThrow(/RUN_MAX_REFUSED_CALLS/);
    }
  });

  it('lets an organization make 1,000 API keys in any 24 hours unless told otherwise (1 to 1,000,000)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).apiKeysCreatedPerDay).toBe(1000);
    expect(resolveConfig({ DATA_DIR: dir, API_KEYS_CREATED_PER_DAY: '25000' }).apiKeysCreatedPerDay).toBe(25_000);
    for (const bad of ['0', '-3', '1000001', '1.5', 'many']) {
      expect(() => resolveConfig({ DATA_DIR: dir, API_KEYS_CREATED_PER_DAY: bad })).toThrow(/API_KEYS_CREATED_PER_DAY/);
    }
  });

  it('caps an endpoint at 10,000 pending deliveries unless told otherwise', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).webhookMaxPendingPerEndpoint).toBe(10_000);
    expect(resolveConfig({ DATA_DIR: dir, WEBHOOK_MAX_PENDING_PER_ENDPOINT: ' 250000 ' }).webhookMaxPendingPerEndpoint).toBe(250_000);
    expect(resolveConfig({ DATA_DIR: dir, WEBHOOK_MAX_PENDING_PER_ENDPOINT: '10' }).webhookMaxPendingPerEndpoint).toBe(10);
  });

  it('ends a statement of the API past a minute unless told otherwise (0: never)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).databaseStatementTimeoutMs).toBe(60_000);
    expect(resolveConfig({ DATA_DIR: dir, DATABASE_STATEMENT_TIMEOUT_MS: ' 5000 ' }).databaseStatementTimeoutMs).toBe(5_000);
    expect(resolveConfig({ DATA_DIR: dir, DATABASE_STATEMENT_TIMEOUT_MS: '0' }).databaseStatementTimeoutMs).toBe(0);
  });

  it("bounds an organization's stored documents and agents at 1 GiB each, its runs at 10 GiB, its skills and collections at 1,000, its documents at a million and its memories at 1 GiB unless told otherwise", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).storage).toEqual({
      knowledgeBytesPerOrg: 1024 ** 3,
      agentBytesPerOrg: 1024 ** 3,
      runBytesPerOrg: 10 * 1024 ** 3,
      skillsPerOrg: 1000,
      knowledgeCollectionsPerOrg: 1000,
      knowledgeDocumentsPerOrg: 1_000_000,
      memoryBytesPerOrg: 1024 ** 3,
    });
    expect(
      resolveConfig({
        DATA_DIR: dir,
        KNOWLEDGE_MAX_BYTES_PER_ORG: '10000000000',
        AGENTS_MAX_BYTES_PER_ORG: '2048',
        RUNS_MAX_BYTES_PER_ORG: '4096',
        SKILLS_MAX_PER_ORG: ' 5 ',
        KNOWLEDGE_MAX_COLLECTIONS_PER_ORG: '7',
        KNOWLEDGE_MAX_DOCUMENTS_PER_ORG: '20000',
        MEMORY_MAX_BYTES_PER_ORG: '30000',
      }).storage,
    ).toEqual({
      knowledgeBytesPerOrg: 10_000_000_000,
      agentBytesPerOrg: 2048,
      runBytesPerOrg: 4096,
      skillsPerOrg: 5,
      knowledgeCollectionsPerOrg: 7,
      knowledgeDocumentsPerOrg: 20_000,
      memoryBytesPerOrg: 30_000,
    });
  });

  it('takes TRUST_PROXY as addresses and ranges, or a number of proxies, and believes no proxy unless told', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).trustProxy).toBe(false);
    expect(resolveConfig({ DATA_DIR: dir, TRUST_PROXY: ' 10.0.0.0/8, 192.168.1.5 ,::1,fd00::/8' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '192.168.1.5',
      '::1',
      'fd00::/8',
    ]);
    expect(resolveConfig({ DATA_DIR: dir, TRUST_PROXY: '2' }).trustProxy).toBe(2);
  });

  it.each(['true', '0', '11', '10.0.0.0/33', 'fd00::/129', '10.0.0.1/8/1', 'proxy.example', '10.0.0.1,', '*'])('refuses TRUST_PROXY=%p, naming it', (value) => {
    expect(() => parseEnvironment({ TRUST_PROXY: value })).toThrow(/TRUST_PROXY:/);
  });

  it('keeps finished runs for good unless RUN_RETENTION_DAYS says how many days', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir }).runs.retentionMs).toBe(0);
    expect(resolveConfig({ DATA_DIR: dir, RUN_RETENTION_DAYS: ' 90 ' }).runs.retentionMs).toBe(90 * 86_400_000);
    for (const value of ['-1', '1.5', 'month', '36501']) expect(() => parseEnvironment({ RUN_RETENTION_DAYS: value })).toThrow(/RUN_RETENTION_DAYS:/);
  });

  it('parses numbers and keeps given values', () => {
    const env = parseEnvironment({
      PORT: '8080',
      APPROVAL_TTL_SECONDS: '60',
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgres://u@h/db',
      PLATFORM_ADMIN_TOKEN: 'x'.repeat(20),
    });
    expect(env).toMatchObject({ PORT: 8080, APPROVAL_TTL_SECONDS: 60, LOG_LEVEL: 'debug', DATABASE_URL: 'postgres://u@h/db' });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['APPROVAL_TTL_SECONDS', '0'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'mysql://x'],
    ['PLATFORM_ADMIN_TOKEN', 'short'],
    ['TOOL_TIMEOUT_MS', '1.5'],
    ['WEBHOOK_DELIVERY_RETENTION_DAYS', '0'],
    ['WEBHOOK_DELIVERY_RETENTION_DAYS', '366'],
    ['WEBHOOK_DELIVERY_RETENTION_DAYS', '1.5'],
    ['WEBHOOK_DELIVERY_RETENTION_DAYS', 'week'],
    ['KNOWLEDGE_MAX_BYTES_PER_ORG', '0'],
    ['KNOWLEDGE_MAX_BYTES_PER_ORG', '1e9'],
    ['AGENTS_MAX_BYTES_PER_ORG', '0'],
    ['AGENTS_MAX_BYTES_PER_ORG', 'lots'],
    ['SKILLS_MAX_PER_ORG', '0'],
    ['MCP_HELD_CALLS_PER_ORG', '-1'],
    ['SKILLS_MAX_PER_ORG', '1000001'],
    ['KNOWLEDGE_MAX_COLLECTIONS_PER_ORG', '0'],
    ['KNOWLEDGE_MAX_DOCUMENTS_PER_ORG', 'many'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '-1'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '3600001'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '1.5'],
    ['WEBHOOK_MAX_PENDING_PER_ENDPOINT', '9'],
    ['WEBHOOK_MAX_PENDING_PER_ENDPOINT', '10000001'],
    ['WEBHOOK_MAX_PENDING_PER_ENDPOINT', '1e4'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => parseEnvironment({ [name]: value })).toThrow(ConfigError);
    expect(() => parseEnvironment({ [name]: value })).toThrow(new RegExp(`${name}:`));
  });

  it('names every bad variable at once', () => {
    try {
      parseEnvironment({ PORT: 'x', LOG_LEVEL: 'y' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect((err as Error).message).toMatch(/PORT:/);
      expect((err as Error).message).toMatch(/LOG_LEVEL:/);
    }
  });

  it('refuses a real database without an admin token', () => {
    expect(() => resolveConfig({ DATABASE_URL: 'postgres://u@h/db' })).toThrow(/PLATFORM_ADMIN_TOKEN must be set/);
  });

  it('generates the embedded admin token once, mode 0600, and reads it back', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const logs: string[] = [];
    const first = resolveConfig({ DATA_DIR: dir }, (m) => logs.push(m)).platformAdminToken;
    const path = join(dir, 'admin-token');
    expect(readFileSync(path, 'utf8').trim()).toBe(first);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(first.length).toBeGreaterThanOrEqual(40);
    expect(resolveConfig({ DATA_DIR: dir }).platformAdminToken).toBe(first);
    expect(logs[0]).toContain(path);
  });

  it('prefers PLATFORM_ADMIN_TOKEN and refuses an unusable token file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    expect(resolveConfig({ DATA_DIR: dir, PLATFORM_ADMIN_TOKEN: 'y'.repeat(32) }).platformAdminToken).toBe('y'.repeat(32));
    writeFileSync(join(dir, 'admin-token'), 'tiny');
    expect(() => resolveConfig({ DATA_DIR: dir })).toThrow(/no usable admin token/);
  });
});

describe('a refused secret', () => {
  it('refuses a Redis URL ioredis cannot parse at start, naming the variable and not the password (AH-F2)', () => {
    // It passed the pattern, and ioredis's TypeError printed the whole URL in a stack trace.
    for (const url of ['redis://:hunter2pw@127.0.0.1:notaport', 'redis://:hunter2pw@127.0.0.1:70000/3', 'rediss://:hunter2pw@[::1/0']) {
      expect(() => parseEnvironment({ RATE_LIMIT_REDIS_URL: url })).toThrow(/RATE_LIMIT_REDIS_URL: .*\(value not shown\)/);
      expect(() => parseEnvironment({ RATE_LIMIT_REDIS_URL: url })).not.toThrow(/hunter2pw/);
    }
    expect(parseEnvironment({ RATE_LIMIT_REDIS_URL: 'rediss://:hunter2pw@[::1]:6380/3' }).RATE_LIMIT_REDIS_URL).toBe('rediss://:hunter2pw@[::1]:6380/3');
  });

  it('is named without its value', () => {
    const token = 'short-secret';
    expect(() => parseEnvironment({ PLATFORM_ADMIN_TOKEN: token, DATABASE_URL: 'mysql://u:hunter2@db/x' })).toThrow(
      /PLATFORM_ADMIN_TOKEN: .*\(value not shown\)/,
    );
    try {
      parseEnvironment({ PLATFORM_ADMIN_TOKEN: token, DATABASE_URL: 'mysql://u:hunter2@db/x' });
    } catch (e) {
      expect(String(e)).not.toContain(token);
      expect(String(e)).not.toContain('hunter2');
    }
  });
});

describe('the identity provider', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'cfg-'));

  it('is off unless OIDC_ISSUER is set, and takes the documented defaults', () => {
    expect(resolveConfig({ DATA_DIR: dir() }).oidc).toBeUndefined();
    expect(resolveConfig({ DATA_DIR: dir(), OIDC_ISSUER: '', OIDC_AUDIENCE: '' }).oidc).toBeUndefined();
    expect(resolveConfig({ DATA_DIR: dir(), OIDC_ISSUER: 'https://login.example.com/tenant/v2.0', OIDC_AUDIENCE: 'api://gateway' }).oidc).toMatchObject({
      issuer: 'https://login.example.com/tenant/v2.0',
      audience: 'api://gateway',
      orgClaim: 'org_id',
      rolesClaim: 'roles',
      clockSkewSeconds: 60,
    });
  });

  it('refuses an issuer without an audience, an audience without an issuer, and an issuer that is no URL', () => {
    expect(() => resolveConfig({ DATA_DIR: dir(), OIDC_ISSUER: 'https://login.example.com' })).toThrow(/OIDC_AUDIENCE: must be set with OIDC_ISSUER/);
    expect(() => resolveConfig({ DATA_DIR: dir(), OIDC_AUDIENCE: 'api://gateway' })).toThrow(/OIDC_AUDIENCE: is set but OIDC_ISSUER is not/);
    expect(() => parseEnvironment({ OIDC_ISSUER: 'login.example.com' })).toThrow(/OIDC_ISSUER:/);
    expect(() => parseEnvironment({ OIDC_CLOCK_SKEW_SECONDS: '3600' })).toThrow(/OIDC_CLOCK_SKEW_SECONDS:/);
    expect(() => parseEnvironment({ OIDC_ROLES_CLAIM: 'two words' })).toThrow(/OIDC_ROLES_CLAIM:/);
  });

  it('requires access tokens typed at+jwt only when OIDC_REQUIRED_TOKEN_TYPE says so, and takes no other value', () => {
    const base = { DATA_DIR: dir(), OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'api://gateway' };
    expect(resolveConfig(base).oidc?.requireAccessTokenType).toBeUndefined();
    expect(resolveConfig({ ...base, OIDC_REQUIRED_TOKEN_TYPE: '' }).oidc?.requireAccessTokenType).toBeUndefined();
    expect(resolveConfig({ ...base, OIDC_REQUIRED_TOKEN_TYPE: 'at+jwt' }).oidc?.requireAccessTokenType).toBe(true);
    expect(() => parseEnvironment({ OIDC_REQUIRED_TOKEN_TYPE: 'JWT' })).toThrow(/OIDC_REQUIRED_TOKEN_TYPE:/);
  });

  it('asks the introspection endpoint only when it is set with its client, holding answers 30 s unless told otherwise', () => {
    const base = { DATA_DIR: dir(), OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'api://gateway' };
    const asked = { OIDC_INTROSPECTION_URL: 'https://login.example.com/introspect', OIDC_CLIENT_ID: 'gateway', OIDC_CLIENT_SECRET: 'hunter2 and more' };
    expect(resolveConfig(base).oidc?.introspection).toBeUndefined();
    expect(resolveConfig({ ...base, ...asked }).oidc?.introspection).toEqual({
      url: 'https://login.example.com/introspect',
      clientId: 'gateway',
      clientSecret: 'hunter2 and more',
      cacheMs: 30_000,
    });
    expect(resolveConfig({ ...base, ...asked, OIDC_INTROSPECTION_CACHE_SECONDS: '0' }).oidc?.introspection?.cacheMs).toBe(0);
    expect(() => parseEnvironment({ OIDC_INTROSPECTION_CACHE_SECONDS: '301' })).toThrow(/OIDC_INTROSPECTION_CACHE_SECONDS:/);
    expect(() => resolveConfig({ ...base, OIDC_INTROSPECTION_URL: asked.OIDC_INTROSPECTION_URL })).toThrow(/OIDC_CLIENT_ID and OIDC_CLIENT_SECRET/);
    expect(() => resolveConfig({ ...base, OIDC_CLIENT_ID: 'gateway', OIDC_CLIENT_SECRET: 'x' })).toThrow(/OIDC_CLIENT_ID and OIDC_CLIENT_SECRET/);
    expect(() => resolveConfig({ DATA_DIR: dir(), ...asked })).toThrow(/OIDC_INTROSPECTION_URL: is set but OIDC_ISSUER is not/);
    expect(() => parseEnvironment({ OIDC_INTROSPECTION_URL: 'login.example.com/introspect' })).toThrow(/OIDC_INTROSPECTION_URL:/);
    // A secret refused is named, never shown.
    try {
      parseEnvironment({ OIDC_CLIENT_SECRET: 'hunter2\u0001' });
      throw new Error('not refused');
    } catch (e) {
      expect(String(e)).toMatch(/OIDC_CLIENT_SECRET:/);
      expect(String(e)).not.toContain('hunter2');
    }
  });
});

describe("one organization's share of a node's runs", () => {
  const runs = (env: Record<string, string>) => resolveConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'cfg-')), ...env }).runs;

  it('is a quarter of RUN_MAX_CONCURRENT unless set, at least 1, and never more than RUN_MAX_CONCURRENT', () => {
    expect(runs({})).toMatchObject({ maxConcurrent: 16, maxConcurrentPerOrg: 4 });
    expect(runs({ RUN_MAX_CONCURRENT: '3' }).maxConcurrentPerOrg).toBe(1);
    expect(runs({ RUN_MAX_CONCURRENT: '40', RUN_MAX_CONCURRENT_PER_ORG: '' }).maxConcurrentPerOrg).toBe(10);
    expect(runs({ RUN_MAX_CONCURRENT_PER_ORG: '16' }).maxConcurrentPerOrg).toBe(16);
    expect(runs({ RUN_MAX_CONCURRENT: '8', RUN_MAX_CONCURRENT_PER_ORG: '20' }).maxConcurrentPerOrg).toBe(8);
  });

  it.each(['0', '1.5', 'many'])('refuses RUN_MAX_CONCURRENT_PER_ORG=%s, naming it', (value) => {
    expect(() => parseEnvironment({ RUN_MAX_CONCURRENT_PER_ORG: value })).toThrow(/RUN_MAX_CONCURRENT_PER_ORG:/);
  });

  it('keeps a quarter of RUN_MAX_CONCURRENT for organizations with no run on the node, unless set, and never all of it', () => {
    expect(runs({}).reservedForNewOrgs).toBe(4);
    expect(runs({ RUN_MAX_CONCURRENT: '3' }).reservedForNewOrgs).toBe(1);
    expect(runs({ RUN_MAX_CONCURRENT: '1' }).reservedForNewOrgs).toBe(0);
    // One organization alone still steps its whole share: a single-tenant deployment keeps every slot.
    expect(runs({ RUN_MAX_CONCURRENT_PER_ORG: '16' }).reservedForNewOrgs).toBe(0);
    expect(runs({ RUN_MAX_CONCURRENT_PER_ORG: '14' }).reservedForNewOrgs).toBe(2);
    expect(runs({ RUN_RESERVED_FOR_NEW_ORGS: '0' }).reservedForNewOrgs).toBe(0);
    expect(runs({ RUN_RESERVED_FOR_NEW_ORGS: '' }).reservedForNewOrgs).toBe(4);
    expect(runs({ RUN_MAX_CONCURRENT_PER_ORG: '16', RUN_RESERVED_FOR_NEW_ORGS: '6' }).reservedForNewOrgs).toBe(6);
    expect(runs({ RUN_MAX_CONCURRENT: '8', RUN_RESERVED_FOR_NEW_ORGS: '50' }).reservedForNewOrgs).toBe(7);
  });

  it.each(['-1', '1.5', 'many'])('refuses RUN_RESERVED_FOR_NEW_ORGS=%s, naming it', (value) => {
    expect(() => parseEnvironment({ RUN_RESERVED_FOR_NEW_ORGS: value })).toThrow(/RUN_RESERVED_FOR_NEW_ORGS:/);
  });
});
