import { TestIdentityProvider } from './support/oidc-provider';
import { createTestApp, TestApp } from './support/test-app';

/**
 * The protected-resource metadata names the endpoint as the request reached the server (its Host),
 * and may be cached by shared caches for five minutes: without `Vary: Host` a cache in front of
 * the server kept one Host's document for every client, who then refused it (attack round 9, C-F4).
 */
describe('protected-resource metadata and shared caches (e2e)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;

  beforeAll(async () => {
    idp = await TestIdentityProvider.start();
    t = await createTestApp({
      config: {
        oidc: idp.config(),
        corsOrigins: ['https://console.example'],
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await idp.close();
  });

  it('varies with Host, which it names, and with Origin still (CORS)', async () => {
    const path = '/.well-known/oauth-protected-resource/api/v1/agents/00000000-0000-4000-8000-000000000000/mcp';
    for (const host of ['gateway.example', 'other.example:8443']) {
      const res = await t.http.get(path).set('Host', host).set('Origin', 'https://console.example').expect(200);
      expect(res.body.resource).toBe(`http://${host}/api/v1/agents/00000000-0000-4000-8000-000000000000/mcp`);
      expect(res.headers['cache-control']).toBe('public, max-age=300');
      expect(res.headers.vary?.split(/,\s*/).map((v: string) => v.toLowerCase())).toEqual(['origin', 'host']);
      expect(res.headers['access-control-allow-origin']).toBe('https://console.example');
    }
  });
});
