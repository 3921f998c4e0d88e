import { redactedUrlAttributes } from './tracing';

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

  it('leaves a URL it cannot parse to the instrumentation, which skips it', () => {
    expect(redactedUrlAttributes('not a url', 'also not')).toEqual({});
  });
});
