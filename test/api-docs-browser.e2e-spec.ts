import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './support/browser';
import { createOrg, createTestApp, TestApp } from './support/test-app';

/**
 * `/api/docs` in a real browser (headless Chromium): the page once rendered blank because one
 * description broke its init script (see src/common/api-docs.ts). The page must show every
 * operation of the document, and throw nothing while doing so; under its Content-Security-Policy
 * (API_DOCS_SECURITY_HEADERS) nothing is refused, a token typed into Authorize reaches Execute,
 * and another page cannot frame it.
 */
describe('the interactive API docs in a browser (e2e)', () => {
  let t: TestApp;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    const address = t.app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('renders every operation of the OpenAPI document, and its policy refuses nothing the page does', async () => {
    const doc = (await t.http.get('/api/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const expected = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // A refusal of the Content-Security-Policy shows as an error on the console, and as an event.
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.addInitScript(
      "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP refused ' + e.violatedDirective + ': ' + e.blockedURI))",
    );
    const answer = await page.goto(`${base}/api/docs`);
    expect(answer?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('.opblock').count()).toBe(expected);
    await expect(page.locator('.opblock-summary-path', { hasText: '/api/v1/agents/{agentId}/publish' }).count()).resolves.toBe(1);
    await expect(page.locator('.info .title').innerText()).resolves.toContain('Capability platform API');
    expect(errors).toEqual([]);
  });

  it('Authorize, then Execute: the call reaches the API with the token, under the policy', async () => {
    const org = await createOrg(t);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/api/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    await page.getByLabel('auth-bearer-value').fill(org.keys.viewer);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();
    const me = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: /^\/api\/v1\/me$/ }) });
    await me.locator('.opblock-summary').click();
    await me.getByRole('button', { name: 'Try it out' }).click();
    await me.getByRole('button', { name: 'Execute' }).click();
    const live = me.locator('.live-responses-table tr.response');
    await live.waitFor({ timeout: 10_000 });
    await expect(live.locator('.response-col_status').innerText()).resolves.toBe('200');
    await expect(live.locator('.response-col_description').innerText()).resolves.toContain(org.id);
    expect(errors).toEqual([]);
  });

  it('cannot be framed by another page', async () => {
    // Another origin (the loopback on another port: Chromium refuses a public page's frame of a
    // loopback address by itself, whatever the headers) whose page frames the docs.
    const framing = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<iframe src="${base}/api/docs" width="800" height="600"></iframe>`),
    );
    await new Promise<void>((listening) => framing.listen(0, '127.0.0.1', listening));
    try {
      const page = await browser.newPage();
      const refusals: string[] = [];
      page.on('console', (m) => refusals.push(m.text()));
      const docs = page.waitForResponse(`${base}/api/docs`);
      await page.goto(`http://127.0.0.1:${(framing.address() as AddressInfo).port}/`);
      expect((await docs).status()).toBe(200);
      const frame = page.frames().find((f) => f !== page.mainFrame())!;
      for (const deadline = Date.now() + 10_000; !frame.url().startsWith('chrome-error:') && Date.now() < deadline;) await page.waitForTimeout(50);
      // Refused: the frame holds the browser's error page, never the docs.
      expect(frame.url()).toMatch(/^chrome-error:/);
      expect(refusals.join('\n')).toContain("frame-ancestors 'none'");
    } finally {
      framing.close();
    }
  });
});
