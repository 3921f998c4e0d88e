import { IntrospectionUnavailableError, PostForm, TokenIntrospection } from './token-introspection';

describe('TokenIntrospection', () => {
  const settings = { url: 'https://idp.example/introspect', clientId: 'gateway:1', clientSecret: 'a b&c', cacheMs: 30_000 };
  const later = () => Date.now() + 3_600_000;

  function endpoint(answer: (token: string) => { status: number; text: string }) {
    const asked: { url: string; headers: Record<string, string>; body: URLSearchParams }[] = [];
    const post: PostForm = async (url, headers, body) => {
      asked.push({ url, headers, body: new URLSearchParams(body) });
      return answer(new URLSearchParams(body).get('token')!);
    };
    return { asked, post };
  }

  it('asks the endpoint as its client, by HTTP Basic of the form-encoded parts, with the token as an access token', async () => {
    const { asked, post } = endpoint(() => ({ status: 200, text: '{"active":true}' }));
    expect(await new TokenIntrospection(settings, post).isActive('tok.en.1', later())).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0].url).toBe(settings.url);
    expect(asked[0].headers.authorization).toBe(`Basic ${Buffer.from('gateway%3A1:a+b%26c').toString('base64')}`);
    expect(asked[0].headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(asked[0].body)).toEqual({ token: 'tok.en.1', token_type_hint: 'access_token' });
  });

  it('holds an answer for cacheMs, never past the token’s end, and asks once for callers at the same moment', async () => {
    let active = true;
    const { asked, post } = endpoint(() => ({ status: 200, text: JSON.stringify({ active }) }));
    const introspection = new TokenIntrospection(settings, post);
    expect(await Promise.all([1, 2, 3].map(() => introspection.isActive('t1', later())))).toEqual([true, true, true]);
    expect(asked).toHaveLength(1);
    active = false;
    // Held: the revocation is seen once the answer is older than cacheMs.
    expect(await introspection.isActive('t1', later())).toBe(true);
    expect(asked).toHaveLength(1);
    // A token ending now is asked again at once.
    expect(await introspection.isActive('t2', Date.now() - 1)).toBe(false);
    expect(await introspection.isActive('t2', Date.now() - 1)).toBe(false);
    expect(asked).toHaveLength(3);
  });

  it('asks every time when cacheMs is 0', async () => {
    const { asked, post } = endpoint((token) => ({ status: 200, text: JSON.stringify({ active: token === 'live' }) }));
    const introspection = new TokenIntrospection({ ...settings, cacheMs: 0 }, post);
    expect(await introspection.isActive('live', later())).toBe(true);
    expect(await introspection.isActive('live', later())).toBe(true);
    expect(await introspection.isActive('gone', later())).toBe(false);
    expect(asked).toHaveLength(3);
  });

  it.each([
    ['an error status', { status: 401, text: '{"error":"invalid_client"}' }],
    ['a body that is not JSON', { status: 200, text: '<html>' }],
    ['no boolean active', { status: 200, text: '{"active":"true"}' }],
    ['JSON that is not an object', { status: 200, text: 'null' }],
  ])('takes no token on %s, and holds no answer for it', async (_why, answer) => {
    const { asked, post } = endpoint(() => answer);
    const introspection = new TokenIntrospection(settings, post);
    await expect(introspection.isActive('t', later())).rejects.toBeInstanceOf(IntrospectionUnavailableError);
    await expect(introspection.isActive('t', later())).rejects.toBeInstanceOf(IntrospectionUnavailableError);
    expect(asked).toHaveLength(2);
  });
});
