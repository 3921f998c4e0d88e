import { connect, Socket } from 'node:net';
import { parseEnvironment, ConfigError } from '../../src/config/app-config';
import { DEFAULT_HTTP_TIMEOUTS } from '../../src/config/http-config';
import { resolveConfig } from '../../src/config/resolve-config';
import { createTestApp, TestApp } from '../support/test-app';

/**
 * Issue 13, class 9: slow clients. A request sent a byte every few seconds held its connection
 * open indefinitely, before authentication. Headers and whole requests (with their body) now have
 * timeouts (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS), answered 408 as a problem document.
 */
// Property runs make many requests; a loaded CI machine must not fail them on time alone.
jest.setTimeout(180_000);

describe('slow clients are cut off with 408', () => {
  let t: TestApp;
  let port: number;
  const HEADERS_MS = 600;
  const REQUEST_MS = 1200;
  beforeAll(async () => {
    t = await createTestApp({ config: { httpTimeouts: { ...DEFAULT_HTTP_TIMEOUTS, headersMs: HEADERS_MS, requestMs: REQUEST_MS, idleMs: 10_000 } } });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
  }, 180_000);
  afterAll(() => t.close());

  /** Sends `chunks` one every `everyMs` until the server answers or closes; returns the answer and when it came. */
  function dribble(chunks: string[], everyMs: number): Promise<{ answer: string; afterMs: number }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const socket: Socket = connect(port, '127.0.0.1');
      let answer = '';
      let i = 0;
      const timer = setInterval(() => {
        if (i < chunks.length && socket.writable) socket.write(chunks[i++]);
      }, everyMs);
      socket.on('data', (c) => (answer += c.toString('latin1')));
      const done = () => {
        clearInterval(timer);
        resolve({ answer, afterMs: Date.now() - started });
      };
      socket.on('close', done);
      socket.on('error', (err) => (answer ? done() : reject(err)));
    });
  }

  it('headers sent a byte at a time: 408 problem document once the header timeout passes', async () => {
    const head = 'GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ' + 'a'.repeat(200);
    const { answer, afterMs } = await dribble([...head], 100);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toMatch(/Content-Type: application\/problem\+json/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 408, code: 'request_timeout' });
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    expect(afterMs).toBeLessThan(HEADERS_MS + 5_000);
  });

  it('a body sent a byte at a time: 408 once the request timeout passes', async () => {
    // Without a token, or with a made-up one, the request is refused before its body (anonymous-bodies.e2e-spec.ts).
    const head = `POST /api/v1/orgs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${t.adminToken}\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n`;
    const { answer, afterMs } = await dribble([head, ...'{"slug":"slow","name":"'.split(''), ...'x'.repeat(300).split('')], 100);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(afterMs).toBeGreaterThanOrEqual(REQUEST_MS - 50);
    expect(afterMs).toBeLessThan(REQUEST_MS + 5_000);
  });

  it('a prompt client is not affected', async () => {
    await t.http.get('/health').expect(200);
  });

  it('the timeouts are configurable, validated and defaulted', () => {
    const config = resolveConfig(
      {
        PLATFORM_ADMIN_TOKEN: 'x'.repeat(20),
        DATABASE_URL: 'postgres://db/x',
        SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
        HTTP_HEADERS_TIMEOUT_MS: '5000',
        HTTP_REQUEST_TIMEOUT_MS: '20000',
        HTTP_IDLE_TIMEOUT_MS: '30000',
      },
      () => undefined,
    );
    expect(config.httpTimeouts).toMatchObject({ headersMs: 5000, requestMs: 20000, idleMs: 30000 });
    const defaults = parseEnvironment({});
    expect([defaults.HTTP_HEADERS_TIMEOUT_MS, defaults.HTTP_REQUEST_TIMEOUT_MS, defaults.HTTP_IDLE_TIMEOUT_MS]).toEqual([10_000, 30_000, 60_000]);
    for (const [name, value] of [
      ['HTTP_HEADERS_TIMEOUT_MS', '0'],
      ['HTTP_REQUEST_TIMEOUT_MS', 'soon'],
      ['HTTP_IDLE_TIMEOUT_MS', '-1'],
    ]) {
      expect(() => parseEnvironment({ [name]: value })).toThrow(ConfigError);
      expect(() => parseEnvironment({ [name]: value })).toThrow(name);
    }
  });
});
