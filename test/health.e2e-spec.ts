import { TypeOrmHealthIndicator } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { bearer, createOrg, createTestApp, TestApp } from './support/test-app';

/** API.md "Operations": `/health` answers while the process does; `/health/ready` only while the database does. */
describe('health (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('answers 200 on both while the database answers', async () => {
    await t.http.get('/health').expect(200, { status: 'ok' });
    const ready = await t.http.get('/health/ready').expect(200);
    expect(ready.body).toEqual({ status: 'ok', info: { database: { status: 'up' } }, error: {}, details: { database: { status: 'up' } } });
    expect(ready.headers['cache-control']).toContain('no-store');
  });

  it('answers /health/ready 503 service_unavailable when the database does not answer, and /health still 200', async () => {
    // Found by this test: terminus's 503 went through the problem filter as an unknown error, a 500.
    const ds = t.app.get(DataSource);
    await ds.destroy();
    try {
      const res = await t.http.get('/health/ready').expect(503);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 503, code: 'service_unavailable', checks: { database: 'down' } });
      await t.http.get('/health').expect(200, { status: 'ok' });
    } finally {
      await ds.initialize();
    }
    await t.http.get('/health/ready').expect(200);
  });

  it('answers probes that arrive during a ping with that ping: one connection at a time, however many probe', async () => {
    // Public and not rate limited: 200 anonymous probes at once, each pinging, queued every
    // organization's queries behind theirs in the pool (attack round 11, G-F2).
    // On the prototype: terminus makes its indicators per request scope.
    const ping = TypeOrmHealthIndicator.prototype.pingCheck;
    let pings = 0;
    const spy = jest.spyOn(TypeOrmHealthIndicator.prototype, 'pingCheck').mockImplementation(async function (this: TypeOrmHealthIndicator, ...args) {
      pings++;
      await new Promise((resolve) => setTimeout(resolve, 200));
      return ping.apply(this, args);
    });
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, () => t.http.get('/health/ready')));
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
      expect(pings).toBe(1);
      // Not an answer kept: the next probe, after that ping, pings again.
      await t.http.get('/health/ready').expect(200);
      expect(pings).toBe(2);
      spy.mockImplementation(() => Promise.reject(new Error('connection terminated')));
      const down = await Promise.all(Array.from({ length: 5 }, () => t.http.get('/health/ready')));
      expect(down.map((a) => [a.status, a.body.code])).toEqual(Array(5).fill([503, 'service_unavailable']));
    } finally {
      spy.mockRestore();
    }
    await t.http.get('/health/ready').expect(200);
  });

  it('a request while the database is unreachable is 503 service_unavailable with Retry-After, not 500; an unknown key too', async () => {
    const org = await createOrg(t, []);
    const ds = t.app.get(DataSource);
    // What node-postgres throws when the server refuses connections.
    const refused = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', errno: -111 }));
    const query = jest.spyOn(ds, 'query').mockImplementation(refused);
    try {
      // A key no lookup has seen yet (none is cached): deciding whether it exists needs the database.
      const unknown = org.keys.viewer.slice(0, -4) + (org.keys.viewer.endsWith('aaaa') ? 'bbbb' : 'aaaa');
      for (const token of [unknown, org.keys.admin]) {
        const res = await t.http.get('/api/v1/agents').set(...bearer(token));
        expect([res.status, res.body.code, res.headers['retry-after']]).toEqual([503, 'service_unavailable', '5']);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    } finally {
      query.mockRestore();
    }
    await t.http
      .get('/api/v1/agents')
      .set(...bearer(org.keys.viewer))
      .expect(200);
  });

  it.each([
    ['its database is gone by that name (3D000)', '3D000', 'database "gateway" does not exist'],
    ['the password was rotated before the configuration (28P01)', '28P01', 'password authentication failed for user "gateway"'],
    ['pg_hba.conf does not let this client in (28000)', '28000', 'no pg_hba.conf entry for host "10.0.0.7", user "gateway", database "gateway"'],
  ])('a server that is up but refuses the connection because %s: 503 service_unavailable with Retry-After, not 500', async (_why, code, message) => {
    const org = await createOrg(t, []);
    const ds = t.app.get(DataSource);
    // What node-postgres rejects a connection with when the server answers it with an error.
    const query = jest.spyOn(ds, 'query').mockImplementation(() => Promise.reject(Object.assign(new Error(message), { code, severity: 'FATAL' })));
    try {
      for (const [path, token] of [
        ['/api/v1/agents', org.keys.admin],
        ['/api/v1/orgs', t.adminToken],
      ]) {
        const res = await t.http.get(path).set(...bearer(token));
        expect([res.status, res.body.code, res.headers['retry-after']]).toEqual([503, 'service_unavailable', '5']);
      }
    } finally {
      query.mockRestore();
    }
  });

  it('documents both answers with schemas in OpenAPI', async () => {
    const doc = (await t.http.get('/api/docs-json').expect(200)).body;
    const ready = doc.paths['/health/ready'].get.responses;
    expect(ready['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ReadinessView' });
    // Every error answer points at the one shared Problem component.
    const problem = ready['503'].content['application/problem+json'].schema;
    const resolved = problem.$ref ? doc.components.schemas[problem.$ref.split('/').pop()] : problem;
    expect(resolved.required).toContain('code');
    expect(doc.paths['/health'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/LivenessView' });
  });
});
