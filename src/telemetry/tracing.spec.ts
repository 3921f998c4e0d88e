import { instrumentationsFromEnv, redactedUrlAttributes } from './tracing';

describe('the URL of an outgoing call, as a span records it', () => {
  it('keeps nothing to override when the URL hides nothing', () => {
    expect(redactedUrlAttributes('https://mcp.vendor.example', '/mcp')).toEqual({});
    expect(redactedUrlAttributes('https://mcp.vendor.example', '/mcp?')).toEqual({});
  });

  it("hides a query's values, keeping each name once", () => {
    expect(redactedUrlAttributes('https://mcp.vendor.example:8443', '/mcp?api_key=sk-live-123&region=eu&api_key=again')).toEqual({
      'url.full': 'https://mcp.vendor.example:8443/mcp?api_key=REDACTED&region=REDACTED',
      'url.query': 'api_key=REDACTED&region=REDACTED',
    });
  });

  it('hides user information and odd names without leaking either', () => {
    const attrs = redactedUrlAttributes('https://user:pa55@mcp.vendor.example', '/x?t%C3%B6ken=s3cr%C3%A9t&a+b=c');
    expect(attrs['url.full']).toBe('https://REDACTED:REDACTED@mcp.vendor.example/x?t%C3%B6ken=REDACTED&a%20b=REDACTED');
    expect(JSON.stringify(attrs)).not.toMatch(/pa55|s3cr|user/);
  });

  it('hides a path segment shaped like a token, in url.full and url.path (session 36, F-F5)', () => {
    expect(redactedUrlAttributes('https://mcp.zapier.com', '/api/mcp/s/ZjQ5YmE3NmQtNzE0OS00YjQ2/mcp')).toEqual({
      'url.full': 'https://mcp.zapier.com/api/mcp/s/REDACTED/mcp',
      'url.query': '',
      'url.path': '/api/mcp/s/REDACTED/mcp',
    });
    expect(redactedUrlAttributes('https://mcp.vendor.example', '/v1/2025-06-18/mcp')).toEqual({});
  });

  it('leaves a URL it cannot parse to the instrumentation, which skips it', () => {
    expect(redactedUrlAttributes('not a url', 'also not')).toEqual({});
  });
});

describe('which instrumentations run, as OTEL_NODE_ENABLED_INSTRUMENTATIONS and OTEL_NODE_DISABLED_INSTRUMENTATIONS say', () => {
  const enabled = (env: NodeJS.ProcessEnv) => [...instrumentationsFromEnv(env).enabled].sort();

  it('runs every one when neither is set, or set blank', () => {
    expect(enabled({})).toEqual(['fastify', 'pg', 'undici']);
    expect(enabled({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: ' ', OTEL_NODE_DISABLED_INSTRUMENTATIONS: '' })).toEqual(['fastify', 'pg', 'undici']);
  });

  it('leaves out those disabled, and runs only those enabled', () => {
    expect(enabled({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg' })).toEqual(['fastify', 'undici']);
    expect(enabled({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: ' pg , undici,' })).toEqual(['fastify']);
    expect(enabled({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'fastify,undici' })).toEqual(['fastify', 'undici']);
  });

  it('applies the enabled list first, then the disabled one: a name in both is left out', () => {
    expect(enabled({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'fastify,pg', OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'pg' })).toEqual(['fastify']);
  });

  it('reports names it has no instrumentation for, once each, and runs none for them', () => {
    const r = instrumentationsFromEnv({
      OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'pg,http,express',
      OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'http,__proto__,constructor',
    });
    expect([...r.enabled]).toEqual(['pg']);
    expect(r.unknown).toEqual(['http', 'express', '__proto__', 'constructor']);
    // Only unknown names enabled: nothing runs, as the operator asked for none of this server's.
    expect(enabled({ OTEL_NODE_ENABLED_INSTRUMENTATIONS: 'http' })).toEqual([]);
  });

  it('takes names in any case', () => {
    expect(enabled({ OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'PG' })).toEqual(['fastify', 'undici']);
  });
});
