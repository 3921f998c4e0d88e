import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { STALLED_STREAMS_PER_ORG } from '../src/runs/runs.controller';
import { RunsRepository } from '../src/runs/runs.repository';
import { RUN_EVENT_READS_PER_ORG } from '../src/runs/runs.service';
import { RunFixturesModule } from './fixtures/run-fixtures.module';
import { bearer, createOrg, createTestApp, TestApp, TestOrg } from './support/test-app';
import { testRunsConfig } from './support/runs-config';

/**
 * Attack round 9 (D-F2): 60 streams of one run whose answers were megabytes, reading nothing,
 * took a node from 0.2 to 1.9 GB and held another organization's requests up to 9.8 s: each
 * stream read the run's row and its events on its own and kept what its client had not taken.
 * An organization's streams now read at most RUN_EVENT_READS_PER_ORG at once (a read waiting for
 * its turn is shared), and at most STALLED_STREAMS_PER_ORG wait for their client; the others are
 * closed and resume with Last-Event-ID.
 */
describe('GET /runs/{id}/events: clients that read nothing (e2e)', () => {
  let t: TestApp;
  let org: TestOrg;
  let provider: http.Server;
  let port: number;
  const sockets: net.Socket[] = [];
  // Six answers of a million three-byte characters each: about 20 MB of events, more than loopback sockets buffer.
  const text = '€'.repeat(1_000_000);

  beforeAll(async () => {
    let answered = 0;
    provider = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const step = answered++;
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < text.length; i += 100_000) res.write(chunk({ content: text.slice(i, i + 100_000) }));
        if (step < 5) {
          res.write(
            chunk({ tool_calls: [{ index: 0, id: `c${step}`, type: 'function', function: { name: 'lookup_order', arguments: `{"query":"A-${step}"}` } }] }),
          );
          res.end(chunk({}, 'tool_calls') + 'data: [DONE]\n\n');
        } else res.end(chunk({}, 'stop') + 'data: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    t = await createTestApp({ imports: [RunFixturesModule], config: { runs: testRunsConfig() } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    org = await createOrg(t);
    // Starting an app with a fresh database can be slow on a busy machine.
  }, 180_000);
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await t.close();
    await new Promise((r) => provider.close(r));
  });

  it('reads for them a few at a time and keeps a few of them waiting; the others are closed', async () => {
    const p = await t.http
      .post('/api/v1/model-providers')
      .set(...bearer(org.keys.admin))
      .send({ name: 'large', kind: 'openai-compatible', baseUrl: `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1` })
      .expect(201);
    const agent = await t.http
      .post('/api/v1/agents')
      .set(...bearer(org.keys.builder))
      .send({ slug: 'large-answers', name: 'Large answers' })
      .expect(201);
    await t.http
      .put(`/api/v1/agents/${agent.body.id}/draft`)
      .set(...bearer(org.keys.builder))
      .send({ instructions: 'x', capabilities: [{ id: 'fx-run-tools' }], model: { provider: p.body.id, name: 'm' } })
      .expect(200);
    await t.http
      .post(`/api/v1/agents/${agent.body.id}/publish`)
      .set(...bearer(org.keys.builder))
      .expect(201);
    const run = await t.http
      .post(`/api/v1/agents/${agent.body.id}/runs`)
      .set(...bearer(org.keys.agent))
      .set('Prefer', 'wait=60')
      .send({ input: 'x' })
      .expect(201);
    expect(run.body).toMatchObject({ status: 'succeeded', usage: { modelCalls: 6 } });

    // Each read takes a little while, so that reads made on their own overlap.
    const read = RunsRepository.prototype.events;
    let reading = 0;
    let most = 0;
    const reads = jest.spyOn(RunsRepository.prototype, 'events').mockImplementation(async function (this: RunsRepository, ...args) {
      most = Math.max(most, ++reading);
      try {
        await new Promise((r) => setTimeout(r, 50));
        return await read.apply(this, args);
      } finally {
        reading--;
      }
    });
    const STREAMS = 12;
    for (let i = 0; i < STREAMS; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.write(`GET /api/v1/runs/${run.body.id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${org.keys.viewer}\r\n\r\n`);
      s.pause();
      sockets.push(s);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 3_000));
    reads.mockRestore();
    expect(most).toBeLessThanOrEqual(RUN_EVENT_READS_PER_ORG);

    // Now they read: the streams kept get the whole run and its end; the others were cut before it.
    const whole = await Promise.all(
      sockets.map(
        (s) =>
          new Promise<boolean>((resolve) => {
            let tail = '';
            let seen = false;
            const timer = setTimeout(() => resolve(seen), 20_000);
            s.on('data', (d: Buffer) => {
              tail = (tail + d.toString('latin1')).slice(-4096);
              // The chunked answer's last chunk: the server ended the stream after the run's last event.
              seen ||= tail.endsWith('\r\n0\r\n\r\n');
              if (seen) {
                clearTimeout(timer);
                resolve(true);
              }
            });
            s.on('close', () => {
              clearTimeout(timer);
              resolve(seen);
            });
            s.resume();
          }),
      ),
    );
    const complete = whole.filter(Boolean).length;
    console.info(`of ${STREAMS} streams reading nothing, ${complete} kept to the end; at most ${most} reads at once`);
    expect(complete).toBeLessThanOrEqual(STALLED_STREAMS_PER_ORG);
    expect(complete).toBeGreaterThan(0);
  }, 120_000);
});
