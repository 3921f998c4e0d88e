import { MIN_REDACTED_IN_DATA, redactSecrets, redactSecretsDeep } from './redact-secrets';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const b64url = (text: string) => Buffer.from(text).toString('base64url');

describe('redactSecrets', () => {
  const secret = 'tok-"a\\b/c d&e';
  it('finds a secret as it is, JSON-escaped and URL-encoded, and the token of Bearer <token> alone', () => {
    const text = `raw ${secret} json ${JSON.stringify(secret)} url ${encodeURIComponent(secret)}`;
    expect(redactSecrets(text, { k: secret })).toBe('raw [redacted] json "[redacted]" url [redacted]');
    expect(redactSecrets('sent abcdef123 back', { h: 'Bearer abcdef123' })).toBe('sent [redacted] back');
  });

  it('in data (results, answers), leaves values too short to be secrets alone, keys included', () => {
    const short = 'k'.repeat(MIN_REDACTED_IN_DATA - 1);
    const long = 'k'.repeat(MIN_REDACTED_IN_DATA);
    expect(redactSecretsDeep({ [short]: `a ${short} b` }, { short })).toEqual({ [short]: `a ${short} b` });
    expect(redactSecretsDeep({ [long]: [`a ${long} b`] }, { short, long })).toEqual({ '[redacted]': ['a [redacted] b'] });
    expect(redactSecrets(`a ${short}`, { short })).toBe('a [redacted]');
  });

  describe('in the spellings an echo gives it', () => {
    const token = 'sk-Live-0123456789abcdefXYZ';
    const header = { authorization: `Bearer ${token}` };

    it('in another case: the whole header, the token, their URL-encoded forms', () => {
      const text = `got ${header.authorization.toUpperCase()}, ${token.toLowerCase()} and ${encodeURIComponent(header.authorization).toLowerCase()}`;
      expect(redactSecrets(text, header)).toBe('got [redacted], [redacted] and [redacted]');
      expect(redactSecretsDeep({ text }, header)).toEqual({ text: 'got [redacted], [redacted] and [redacted]' });
    });

    it('hex, in either case, alone or inside a longer dump (attack round 8: a debugging echo)', () => {
      const hex = (text: string) => Buffer.from(text).toString('hex');
      const dump = hex(`GET /mcp HTTP/1.1\r\nAuthorization: ${header.authorization}\r\n`);
      expect(redactSecrets(`sent ${hex(token)} / ${hex(header.authorization).toUpperCase()}`, header)).toBe('sent [redacted] / [redacted]');
      expect(redactSecretsDeep({ dump }, header).dump).toBe(`${hex('GET /mcp HTTP/1.1\r\nAuthorization: ')}[redacted]${hex('\r\n')}`);
    });

    it('base64 and base64url, padded or not, of the header and of its token', () => {
      // Three lengths, for the three paddings.
      for (const t of [token, `${token}1`, `${token}12`]) {
        const creds = { authorization: `Bearer ${t}` };
        for (const value of [creds.authorization, t]) {
          const forms = [b64(value), b64(value).replace(/=+$/, ''), b64url(value), `${b64url(value)}==`.slice(0, b64(value).length)];
          for (const form of forms)
            expect([form, redactSecrets(`[${form}]`, creds), redactSecretsDeep([form], creds)]).toEqual([form, '[[redacted]]', ['[redacted]']]);
        }
      }
    });

    it('inside the base64 of a longer text, whatever the alignment, only the part made of the secret', () => {
      for (const before of ['', 'x', 'xy', 'xyz']) {
        for (const encode of [b64, b64url]) {
          const encoded = encode(`{"headers":{"authorization":"${before}${header.authorization}"},"more":true}`);
          const redacted = redactSecrets(encoded, header);
          expect(redacted).toMatch(/^[A-Za-z0-9+/_-]+\[redacted\][A-Za-z0-9+/=_-]+$/);
          // Around it, at most the characters that also hold the bytes before and after.
          expect(encoded.length - (redacted.length - '[redacted]'.length)).toBeGreaterThanOrEqual(b64(header.authorization).length - 4);
        }
      }
    });

    it("JSON-escaped by other languages' encoders: PHP's `\\/`, .NET's and Go's `\\u00XX`, Python's non-ASCII", () => {
      const slashed = { authorization: 'Bearer Zm9v/YmFy+SLASHSECRET/abc123xyz==' };
      const php = '{"headers":{"authorization":"Bearer Zm9v\\/YmFy+SLASHSECRET\\/abc123xyz=="}}';
      expect(redactSecrets(php, slashed)).toBe('{"headers":{"authorization":"[redacted]"}}');
      const dotnet = '{"authorization":"Bearer Zm9v/YmFy\\u002BSLASHSECRET/abc123xyz=="}';
      expect(redactSecretsDeep({ text: dotnet }, slashed)).toEqual({ text: '{"authorization":"[redacted]"}' });
      const go = { key: 'tok<en>&x-123456' };
      expect(redactSecrets('{"k":"tok\\u003cen\\u003e\\u0026x-123456"}', go)).toBe('{"k":"[redacted]"}');
      const accented = { key: 'pässwörd-123456' };
      expect(redactSecrets('{"k":"p\\u00e4ssw\\u00f6rd-123456"}', accented)).toBe('{"k":"[redacted]"}');
      expect(
        redactSecrets(
          JSON.stringify({ k: 'pässwörd-123456' }).replace(/[^ -~]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`),
          accented,
        ),
      ).toBe('{"k":"[redacted]"}');
    });

    it("a Basic credential's user:password and password, decoded", () => {
      const basic = { authorization: `Basic ${b64('alice:open-sesame-42')}` };
      expect(redactSecrets('as ALICE:open-sesame-42, password Open-Sesame-42', basic)).toBe('as [redacted], password [redacted]');
    });

    it('leaves alone what only resembles it', () => {
      const text = `sk-Live-0123456789abcdefXY ${b64('sk-Live-0123456789abcdefXY').toLowerCase()} Bearer`;
      expect(redactSecretsDeep({ text }, header)).toEqual({ text });
    });

    it('in data too, not for values too short to be secrets', () => {
      const short = 'Abc1234';
      expect(redactSecretsDeep({ a: `${short.toUpperCase()} ${b64(short)}` }, { short })).toEqual({ a: `${short.toUpperCase()} ${b64(short)}` });
    });
  });
});

describe('redactSecretsDeep across the strings of one place', () => {
  const creds = { authorization: 'Bearer supersecret-mcp-credential-XYZ123' };

  it('a credential cut across the text items of a result: each part redacted, other items kept', () => {
    const result = {
      content: [
        { type: 'text', text: 'p1=Bearer supersec' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'text', text: 'ret-mcp-credential-' },
        { type: 'text', text: 'XYZ123 and more' },
      ],
    };
    expect(redactSecretsDeep(result, creds)).toEqual({
      content: [
        { type: 'text', text: 'p1=[redacted]' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'text', text: '[redacted]' },
        { type: 'text', text: '[redacted] and more' },
      ],
    });
  });

  it('cut one character at a time, upper-cased, in a list of strings, and across keys of one place', () => {
    const letters = [...'SUPERSECRET-MCP-CREDENTIAL-XYZ123'];
    const redacted = redactSecretsDeep({ chunks: ['before ', ...letters, ' after'] }, creds);
    expect(redacted.chunks.join('')).toBe(`before ${'[redacted]'.repeat(letters.length)} after`);
    expect(redactSecretsDeep({ headers: { 'supersecret-mcp': 1, '-credential-XYZ123': 2, other: 3 } }, creds)).toEqual({
      headers: { '[redacted]': 2, other: 3 },
    });
  });

  it('strings at different places are not read together', () => {
    const result = { content: [{ type: 'text', text: 'Bearer supersec' }], structuredContent: { note: 'ret-mcp-credential-XYZ123' } };
    expect(redactSecretsDeep(result, creds)).toBe(result);
  });

  it('returns what holds nothing to redact as it is, and copies only the path to a change', () => {
    const kept = { items: [{ a: 'x' }, { b: ['y'] }] };
    const result = { kept, changed: ['supersecret-mcp-credential-XYZ123'] };
    expect(redactSecretsDeep(kept, creds)).toBe(kept);
    const redacted = redactSecretsDeep(result, creds);
    expect(redacted).toEqual({ kept, changed: ['[redacted]'] });
    expect(redacted.kept).toBe(kept);
    expect(result.changed).toEqual(['supersecret-mcp-credential-XYZ123']);
  });

  it('keeps a __proto__ key a key', () => {
    const value = JSON.parse('{"__proto__": {"x": "supersecret-mcp-credential-XYZ123"}}');
    const redacted = redactSecretsDeep(value, creds);
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
    expect(JSON.stringify(redacted)).toBe('{"__proto__":{"x":"[redacted]"}}');
  });
});
