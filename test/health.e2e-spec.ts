import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from './support/test-app';

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
