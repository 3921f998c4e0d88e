import { expectStatus } from '../lib/http';
import type { ThroughputScenario } from '../lib/throughput';

/**
 * Not in the default run: rows that take a request apart, to show where its time goes.
 * `npm run bench -- --no-growth --only=health,me,catalog-platform,catalog`.
 */
export const me: ThroughputScenario = {
  id: 'me',
  name: 'GET /me (key lookup, tiny answer)',
  description: 'Authentication alone: the key looked up by hash with its organization, the rate limiter, a few bytes of answer.',
  async prepare(session) {
    const product = await session.product();
    const token = product.org.keys.builder;
    expectStatus(await product.api.as(token).get('/api/v1/me'), 200, 'GET /api/v1/me');
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path: '/api/v1/me', headers: { authorization: `Bearer ${token}` } }],
    };
  },
};

export const catalogPlatform: ThroughputScenario = {
  id: 'catalog-platform',
  name: 'GET /agents/capabilities (platform token)',
  description: 'The catalog without a key lookup: the platform token is compared in memory. What is left is the catalog answer itself.',
  async prepare(session) {
    const product = await session.product();
    expectStatus(await product.api.get('/api/v1/agents/capabilities'), 200, 'GET /api/v1/agents/capabilities');
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path: '/api/v1/agents/capabilities', headers: { authorization: `Bearer ${product.adminToken}` } }],
    };
  },
};

/** The catalog route with a one-item page: the same code as `catalog`, a tenth of the bytes (what the answer's size costs). */
export const catalogOneItem: ThroughputScenario = {
  id: 'catalog-one',
  name: 'GET /agents/capabilities?limit=1',
  description:
    'The catalog route as `catalog` (an organization key), one item a page: what is left when the answer is small, and what a query to validate costs.',
  async prepare(session) {
    const product = await session.product();
    const token = product.org.keys.builder;
    expectStatus(await product.api.as(token).get('/api/v1/agents/capabilities?limit=1'), 200, 'GET /api/v1/agents/capabilities?limit=1');
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path: '/api/v1/agents/capabilities?limit=1', headers: { authorization: `Bearer ${token}` } }],
    };
  },
};

export const DIAGNOSTICS: ThroughputScenario[] = [me, catalogPlatform, catalogOneItem];
