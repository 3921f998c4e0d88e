import type { Browser } from 'playwright-core';
import { launchBrowser } from './support/browser';
import { createTestApp, TestApp } from './support/test-app';

/**
 * `/api/docs` in a real browser (headless Chromium): the page once rendered blank because one
 * description broke its init script (see src/common/api-docs.ts). The page must show every
 * operation of the document, and throw nothing while doing so.
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

  it('renders every operation of the OpenAPI document', async () => {
    const doc = (await t.http.get('/api/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const expected = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/api/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('.opblock').count()).toBe(expected);
    await expect(page.locator('.opblock-summary-path', { hasText: '/api/v1/agents/{agentId}/publish' }).count()).resolves.toBe(1);
    await expect(page.locator('.info .title').innerText()).resolves.toContain('Capability platform API');
    expect(errors).toEqual([]);
  });
});
