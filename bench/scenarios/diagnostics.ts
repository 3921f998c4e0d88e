import { expectStatus } from '../lib/http';
import { getWithBuilderKey, type ThroughputScenario } from '../lib/throughput';
import { catalog } from './catalog';
import { wideAgent, wideValidate, wideVersion } from './wide-agent';
import { wideKnowledge } from './wide-knowledge';

/**
 * Rows that take a request apart, to show where its time goes (`me` is also in the default run:
 * the catalog is measured against it).
 * `npm run bench -- --no-growth --only=health,me,catalog-platform,catalog`.
 */
export const me: ThroughputScenario = {
  id: 'me',
  name: 'GET /me (key lookup, tiny answer)',
  description: 'Authentication alone: the key looked up by hash with its organization, the rate limiter, a few bytes of answer.',
  prepare: getWithBuilderKey('/api/v1/me'),
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
  prepare: getWithBuilderKey('/api/v1/agents/capabilities?limit=1'),
};

/**
 * The catalog as a client that already holds it asks (browsers revalidate an answer sent with an
 * ETag and `no-cache`): the same route, key lookup and answer lookup as `catalog`, and a 304 with
 * no body. Against `me` it shows what the route's own work costs; against `catalog`, what the
 * 15 KB of the full answer cost.
 */
export const catalogRevalidated: ThroughputScenario = {
  id: 'catalog-304',
  name: 'GET /agents/capabilities, If-None-Match (304)',
  description: 'The catalog route as `catalog` (an organization key), with the ETag of the answer in If-None-Match: everything but the body.',
  async prepare(session) {
    const product = await session.product();
    const token = product.org.keys.builder;
    const path = '/api/v1/agents/capabilities';
    const etag = expectStatus(await product.api.as(token).get(path), 200, `GET ${path}`).headers.get('etag');
    if (!etag) throw new Error(`GET ${path} answered no ETag`);
    expectStatus(await product.api.as(token).send('GET', path, undefined, { 'if-none-match': etag }), 304, `GET ${path} with If-None-Match`);
    return {
      url: product.server.url,
      serverPid: product.server.pid,
      connections: session.options.connections,
      requests: [{ method: 'GET', path, headers: { authorization: `Bearer ${token}`, 'if-none-match': etag } }],
      okStatuses: [304],
    };
  },
};

/**
 * The catalog as every row was measured before the load generator left unread bodies undecoded
 * (bench/lib/load.ts): an `onResponse` that reads nothing makes autocannon decode each answer into a
 * string again. Against `catalog`, in the same run, what that client work cost the row.
 */
export const catalogDecoded: ThroughputScenario = {
  id: 'catalog-decoded',
  name: 'GET /agents/capabilities, body decoded by the client',
  description: 'The `catalog` row with every answer decoded into a string by the load generator, as autocannon does for a request with an onResponse.',
  async prepare(session) {
    const spec = await catalog.prepare(session);
    return { ...spec, requests: spec.requests.map((r) => ({ ...r, onResponse: () => undefined })) };
  },
};

export const DIAGNOSTICS: ThroughputScenario[] = [
  me,
  catalogPlatform,
  catalogOneItem,
  catalogRevalidated,
  catalogDecoded,
  wideAgent,
  wideVersion,
  wideValidate,
  wideKnowledge,
];
