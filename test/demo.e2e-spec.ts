import type { AddressInfo } from 'node:net';
import { DemoError, runDemo } from '../scripts/demo';
import { createTestApp, TestApp } from './support/test-app';

/** `npm run demo` walks the real API; this runs the same walkthrough against a test server. */
describe('npm run demo (e2e)', () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it('walks from a new organization to an approved memory and its audit trail', async () => {
    const lines: string[] = [];
    await runDemo({ url, adminToken: t.adminToken, print: (line) => lines.push(line) });
    const out = lines.join('\n');
    for (const expected of [
      '1. The platform admin creates an organization',
      'version 1 published',
      /search_knowledge +read_only/,
      /remember +mutating +needs approval/,
      '| - **Support handbook** (3 documents)',
      '"thinking":{"effort":"medium"}',
      /1\. Refund policy \(Support handbook, score [\d.]+\)/,
      'status pending_approval, approval ',
      'tool call succeeded',
      '- The customer prefers answers in French [language]',
      /approval\.approved +by approver key/,
      'Done.',
    ]) {
      expect(out).toMatch(expected);
    }
    // Every request was answered as the walkthrough expected; runDemo throws otherwise.
    expect(lines.filter((l) => / -> {2}\d+$/.test(l)).length).toBeGreaterThan(20);
  });

  it('stops at the first unexpected answer, naming the request', async () => {
    await expect(runDemo({ url, adminToken: 'wrong-token-of-enough-length', print: () => undefined })).rejects.toThrow(DemoError);
    await expect(runDemo({ url, adminToken: 'wrong-token-of-enough-length', print: () => undefined })).rejects.toThrow(/^POST \/orgs answered 401, expected 201/);
  });
});
