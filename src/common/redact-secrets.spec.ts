import { MIN_REDACTED_IN_DATA, redactSecrets, redactSecretsDeep } from './redact-secrets';

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
});
