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

  it('walks from a new organization to an approved memory, a catalog MCP tool through approval, a run that pauses and resumes, and its audit trail', async () => {
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
      // A catalog MCP server's tool, through approval.
      /connection reference \([0-9a-f-]{36}\) lists \d+ tools/,
      /echo +read_only \(from its annotations\)/,
      /toggle-simulated-logging +mutating \(from its annotations\)/,
      'tools pinned: echo, toggle-simulated-logging',
      /status pending_approval \(reference\/toggle-simulated-logging\), approval [0-9a-f-]{36}/,
      'approval approved; tool call succeeded on the MCP server',
      /result: .*logging/i,
      // The run against the scripted model: the pause, the approval, the resume by itself.
      /provider scripted-[0-9a-f]{6} at http:\/\/127\.0\.0\.1:\d+\/v1, API key stored sealed \(hasApiKey: true\)/,
      'version 1 published with model scripted-1',
      /status waiting_for_approval, pending approvals [0-9a-f-]{36}/,
      'user: Please refund order A-1042.',
      'assistant: calls remember {"content":"Order A-1042 was refunded on request","tags":["refund"]}',
      /status succeeded, 2 model calls, 1 tool call/,
      /tool \(remember\): .*Order A-1042 was refunded on request/,
      'output: Your refund for order A-1042 is on its way',
      /run\.succeeded/,
      /approval\.approved +by approver key/,
      'Done.',
    ]) {
      expect(out).toMatch(expected);
    }
    // Every request was answered as the walkthrough expected; runDemo throws otherwise.
    expect(lines.filter((l) => / -> {2}\d+$/.test(l)).length).toBeGreaterThan(20);
    // The pause is shown before the approval, and the resume after it.
    const waitingAt = lines.findIndex((l) => l.includes('status waiting_for_approval'));
    const resumedAt = lines.findIndex((l) => /run [0-9a-f-]{36}: status succeeded/.test(l));
    expect(waitingAt).toBeGreaterThan(0);
    expect(resumedAt).toBeGreaterThan(lines.findIndex((l, i) => i > waitingAt && /POST \/api\/v1\/approvals\/.+\/approve {2}-> {2}200/.test(l)));
  });

  it('stops at the first unexpected answer, naming the request', async () => {
    await expect(runDemo({ url, adminToken: 'wrong-token-of-enough-length', print: () => undefined })).rejects.toThrow(DemoError);
    await expect(runDemo({ url, adminToken: 'wrong-token-of-enough-length', print: () => undefined })).rejects.toThrow(
      /^POST \/orgs answered 401, expected 201/,
    );
  });
});
