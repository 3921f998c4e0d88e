import { redactSecrets, redactSecretsDeep } from './redact-secrets';
import { shownUrl, urlHidesSomething, urlQuerySecrets } from './url-secrets';

describe('shownUrl', () => {
  it('hides every query value, a bare parameter whole, and drops the fragment and any user name', () => {
    expect(shownUrl('http://127.0.0.1:4114/mcp?api_key=URLKEY-456')).toBe('http://127.0.0.1:4114/mcp?api_key=[redacted]');
    expect(shownUrl('https://h.example/a/b?x=1&token=t%2Fk&flag&empty=&&sk-abcdefgh#frag')).toBe(
      'https://h.example/a/b?x=[redacted]&token=[redacted]&[redacted]&empty=&&[redacted]',
    );
    expect(shownUrl('https://user:pass@h.example/p#token=abc')).toBe('https://h.example/p');
  });

  it('returns a URL with nothing to hide as given, and a shown URL unchanged', () => {
    for (const plain of ['https://h.example', 'http://127.0.0.1:9/x', 'https://H.example:443/a%20b']) expect(shownUrl(plain)).toBe(plain);
    const shown = shownUrl('https://h.example/m?api_key=secret-1234&v=2');
    expect(shownUrl(shown)).toBe(shown);
    expect(urlHidesSomething(shown)).toBe(false);
    expect(urlHidesSomething('https://h.example/m?v=2')).toBe(true);
    expect(urlHidesSomething('https://h.example/m')).toBe(false);
  });

  it('hides path segments shaped like a token, and shows words, versions and dates (session 36, F-F5)', () => {
    expect(shownUrl('https://mcp.zapier.com/api/mcp/s/ZjQ5YmE3NmQtNzE0OS00YjQ2LWE0MmItOTk2NmQ0MmM0OGRm/mcp')).toBe(
      'https://mcp.zapier.com/api/mcp/s/[redacted]/mcp',
    );
    expect(shownUrl('https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/q4Lr8ZmA0bXkWc7NeYt2Vd9u')).toBe(
      'https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/[redacted]',
    );
    expect(shownUrl('https://discord.com/api/webhooks/123456789012345678/AbC-dEf_1234567890ghIJKlmnOPq?wait=true')).toBe(
      'https://discord.com/api/webhooks/123456789012345678/[redacted]?wait=[redacted]',
    );
    // Encoded: judged decoded too.
    expect(shownUrl('https://h.example/t/abc%2Bdef1234567890x/x')).toBe('https://h.example/t/[redacted]/x');
    const words = 'https://h.example/api/v1/mcp/2025-06-18/streamable-http-endpoint';
    expect(shownUrl(words)).toBe(words);
    expect(urlHidesSomething(words)).toBe(false);
    const shown = shownUrl('https://h.example/s/sk_live_4f9Zq81Lp0aXbYc/mcp?key=sk_live_4f9Zq81Lp0aXbYc');
    expect(shown).toBe('https://h.example/s/[redacted]/mcp?key=[redacted]');
    expect(shownUrl(shown)).toBe(shown);
    expect(urlHidesSomething(shown)).toBe(false);
    expect(urlHidesSomething('https://h.example/s/sk_live_4f9Zq81Lp0aXbYc/mcp')).toBe(true);
  });

  it('hides a segment holding a token after a delimiter, and takes that token as a secret (attack round 14, P-F3)', () => {
    expect(shownUrl('https://h.example/hook;jsessionid=Abc123Def456Ghi789/x')).toBe('https://h.example/[redacted]/x');
    expect(shownUrl('https://h.example/key:Abc123Def456Ghi789')).toBe('https://h.example/[redacted]');
    expect(shownUrl('https://h.example/a,b/(Abc123Def456Ghi789)')).toBe('https://h.example/a,b/[redacted]');
    expect(Object.values(urlQuerySecrets('https://h.example/hook;jsessionid=Abc123Def456Ghi789'))).toContain('Abc123Def456Ghi789');
    const words = 'https://h.example/v1/projects:batchGet;alt=json/items,all';
    expect(shownUrl(words)).toBe(words);
  });

  it('hides a token of letters only, mixed in case, and shows CamelCase names and words (P-F3 rest)', () => {
    expect(shownUrl('https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/qLrZmAbXkWcNeYtVdubHgFsE')).toBe(
      'https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/[redacted]',
    );
    expect(Object.values(urlQuerySecrets('https://h.example/k/qLrZmAbXkWcNeYtVdubHgFsE'))).toContain('qLrZmAbXkWcNeYtVdubHgFsE');
    for (const shown of [
      'https://h.example/api/GetCustomerOrdersByRegionAndStatus',
      'https://h.example/supercalifragilisticexpialidocious',
      'https://h.example/NATIONALAERONAUTICSANDSPACE/x',
      'https://h.example/v1/projects:batchGetAllTheThingsAtOnce',
    ])
      expect(shownUrl(shown)).toBe(shown);
    // Random letter tokens of Slack's length: nearly all hidden.
    let seed = 7;
    const letter = () => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'[(seed = (seed * 1103515245 + 12345) % 2 ** 31) % 52];
    const tokens = Array.from({ length: 2000 }, () => Array.from({ length: 24 }, letter).join(''));
    const hidden = tokens.filter((tok) => shownUrl(`https://h.example/s/${tok}`) === 'https://h.example/s/[redacted]').length;
    expect(hidden / tokens.length).toBeGreaterThan(0.98);
  });

  it('shows nothing of what is not a URL', () => {
    expect(shownUrl('not a url?token=abc')).toBe('[redacted]');
  });
});

describe('urlQuerySecrets', () => {
  it('names the query values long enough to be secrets, as sent and decoded, for redaction of echoes', () => {
    const secrets = urlQuerySecrets('https://h.example/m?api_key=URLKEY-456&v=2&sig=a%2Fb%2Bc%3Dd%3D&sk-bare-token');
    expect(Object.values(secrets).sort()).toEqual(['URLKEY-456', 'a%2Fb%2Bc%3Dd%3D', 'a/b+c=d=', 'sk-bare-token'].sort());
    expect(redactSecrets('GET /m?api_key=URLKEY-456&v=2 failed (v2)', secrets)).toBe('GET /m?api_key=[redacted]&v=2 failed (v2)');
    expect(urlQuerySecrets(null)).toEqual({});
    expect(urlQuerySecrets('https://h.example/m')).toEqual({});
  });
});

describe('urlQuerySecrets: tokens in the path (attack round 11, F-F5)', () => {
  it('takes path segments shaped like a token, as sent and decoded, and leaves words and versions', () => {
    const zapier = Object.values(urlQuerySecrets('https://mcp.zapier.com/api/mcp/s/ZjQ5YmE3NmQtNzE0OS00YjQ2LWE0MmItOTk2NmQ0MmM0OGRm/mcp'));
    expect(zapier).toEqual(['ZjQ5YmE3NmQtNzE0OS00YjQ2LWE0MmItOTk2NmQ0MmM0OGRm']);
    const pipedream = Object.values(urlQuerySecrets('https://remote.mcp.pipedream.net/0f6a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b/github'));
    expect(pipedream).toEqual(['0f6a1c2e-3b4d-4e5f-8a9b-0c1d2e3f4a5b']);
    expect(Object.values(urlQuerySecrets('https://h.example/t/abc%2Bdef1234567890x'))).toEqual(['abc%2Bdef1234567890x', 'abc+def1234567890x']);
    expect(urlQuerySecrets('https://h.example/api/v1/mcp/2025-06-18/streamable-http-endpoint')).toEqual({});
  });

  it('lets classify and redactSecretsDeep hide an echoed path token', () => {
    const url = 'https://mcp.vendor.example/s/sk_live_4f9Zq81Lp0aXbYc/mcp';
    const secrets = urlQuerySecrets(url);
    expect(redactSecrets(`cannot serve ${url}: unknown session`, secrets)).not.toContain('sk_live_4f9Zq81Lp0aXbYc');
    expect(JSON.stringify(redactSecretsDeep({ content: [{ type: 'text', text: `you called ${url.toUpperCase()}` }] }, secrets))).not.toMatch(
      /sk_live_4f9Zq81Lp0aXbYc/i,
    );
  });
});
