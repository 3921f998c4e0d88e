/**
 * `node -r @swc-node/register scripts/mcp-conformance.ts`: the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`, its server scenarios) against an agent's MCP endpoint.
 *
 * It starts a server of its own on a temporary embedded database (as `npm run demo` does),
 * creates an organization, an agent key and a published agent with read-only tools, and runs
 * every active server scenario. The endpoint needs `Authorization`, which the suite cannot send,
 * so the suite talks to a loopback proxy that adds the agent key and forwards everything else
 * as it came (the `Host` and `Origin` of the DNS rebinding scenario included).
 *
 * Scenarios that do not apply to a tools-only, stateless agent endpoint are listed, with the
 * reason, in test/mcp-conformance-baseline.yml; the suite exits non-zero when a scenario outside
 * the baseline fails, or when one in it passes (the baseline is then stale).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOwnServer } from './demo';

const root = join(__dirname, '..');

async function api(base: string, method: string, path: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

/** An organization, an agent key, and a published agent whose tools need no approval and no scope. */
async function publishedAgent(base: string, admin: string): Promise<{ mcpUrl: string; agentKey: string }> {
  const org = await api(base, 'POST', '/orgs', admin, { slug: `conformance-${Date.now().toString(36)}`, name: 'MCP conformance', scopes: [] });
  const key = async (role: string) => (await api(base, 'POST', `/orgs/${org.id}/api-keys`, admin, { name: `conformance ${role}`, roles: [role] })).token;
  const builder = await key('builder');
  const agentKey = await key('agent');
  const agent = await api(base, 'POST', '/agents', builder, { slug: 'conformance', name: 'Conformance' });
  await api(base, 'PUT', `/agents/${agent.id}/draft`, builder, {
    instructions: 'You answer questions about the time.',
    capabilities: [{ id: 'clock' }, { id: 'thinking' }],
  });
  await api(base, 'POST', `/agents/${agent.id}/publish`, builder);
  return { mcpUrl: `${base}/api/v1/agents/${agent.id}/mcp`, agentKey };
}

/** `http://127.0.0.1:<port>/mcp`, forwarding every request to the endpoint with the key added. */
async function authProxy(target: string, token: string): Promise<{ url: string; close(): Promise<void> }> {
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const upstream = http.request({ hostname: to.hostname, port: to.port, path: to.pathname + to.search, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function conformance(url: string, cwd: string): Promise<number> {
  const args = [
    '--import',
    join(root, 'scripts', 'conformance-shim', 'register.mjs'),
    join(root, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
    'server',
    '--url',
    url,
    '--suite',
    'active',
    '--expected-failures',
    join(root, 'test', 'mcp-conformance-baseline.yml'),
  ];
  const child = spawn(process.execPath, args, { cwd, stdio: 'inherit' });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

async function main(): Promise<number> {
  process.stdout.write('Starting a server on a temporary embedded database...\n');
  const server = await startOwnServer();
  // The suite writes its results under ./results; they stay out of the repository.
  const results = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  try {
    const { mcpUrl, agentKey } = await publishedAgent(server.url, server.adminToken);
    const proxy = await authProxy(mcpUrl, agentKey);
    try {
      process.stdout.write(`Conformance suite against ${mcpUrl} (through ${proxy.url})\n`);
      return await conformance(proxy.url, results);
    } finally {
      await proxy.close();
    }
  } finally {
    await server.stop();
    rmSync(results, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
