import { redactSecrets } from './redact-secrets';
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
