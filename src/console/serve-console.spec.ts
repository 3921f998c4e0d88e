import Fastify, { FastifyInstance } from 'fastify';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConsoleDir, registerConsole } from './serve-console';

describe('serving the console', () => {
  let dir: string;
  let app: FastifyInstance;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'console-dist-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>console</title><script type="module" src="/console/assets/app-1.js"></script>');
    writeFileSync(join(dir, 'assets', 'app-1.js'), 'console.log(1)');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => app?.close());

  it('answers the page for every path the app routes, never cached, under a strict policy', async () => {
    app = Fastify();
    await registerConsole(app, dir);
    for (const url of ['/console', '/console/', '/console/agents/1c0ffee0-0000-4000-8000-000000000000/versions?x=1']) {
      const res = await app.inject({ url });
      expect([url, res.statusCode, res.headers['content-type']]).toEqual([url, 200, 'text/html; charset=utf-8']);
      expect(res.body).toContain('<title>console</title>');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toMatch(/default-src 'self'.*script-src 'self'.*frame-ancestors 'none'/);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('serves hashed assets for a year, and a missing file as a 404, never as the page', async () => {
    app = Fastify();
    await registerConsole(app, dir);
    const asset = await app.inject({ url: '/console/assets/app-1.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    expect(asset.headers['content-security-policy']).toBeDefined();
    expect((await app.inject({ url: '/console/assets/app-0.js' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/console/assets/../index.html' })).body).not.toContain('script');
    const stale = await app.inject({ url: '/console/favicon.ico' });
    expect(stale.statusCode).toBe(404);
    expect(stale.headers['content-type']).toContain('application/problem+json');
    expect(stale.json()).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('says how to build it when it is not built', async () => {
    app = Fastify();
    await registerConsole(app, join(dir, 'missing'));
    const res = await app.inject({ url: '/console/agents' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'not_found', detail: expect.stringContaining('npm run build') });
  });

  it('finds dist/console at the package root', () => {
    expect(defaultConsoleDir()).toBe(join(__dirname, '..', '..', 'dist', 'console'));
  });
});
