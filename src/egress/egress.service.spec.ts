import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { testConfig } from '../../test/support/test-app';
import { until } from '../../test/support/until';
import { ApiError } from '../common/api-error';
import { EgressRefusedError, EgressTimeoutError, EgressTooLargeError } from './egress-policy';
import { EgressService } from './egress.service';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function listen(handler: Handler): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const egress = (allowedHosts: string[], requestTimeoutMs = 5000) =>
  new EgressService(testConfig({ egress: { allowedHosts, connectTimeoutMs: 2000, requestTimeoutMs } }));

/**
 * A server that answers its headers at once and then misbehaves in its body: a byte every 50 ms
 * (`/trickle`), as much as the socket takes (`/flood`), or a slow but finite body (`/slow?ms=`).
 * `sockets` settles for each request when the server side of its socket closes, with the bytes written.
 */
async function misbehaving(): Promise<{ server: Server; port: number; sockets: Array<Promise<{ written: number; ms: number }>> }> {
  const sockets: Array<Promise<{ written: number; ms: number }>> = [];
  const started = await listen((req, res) => {
    const at = Date.now();
    let written = 0;
    let ended = false;
    sockets.push(new Promise((resolve) => req.socket.once('close', () => ((ended = true), resolve({ written, ms: Date.now() - at })))));
    const path = new URL(req.url!, 'http://x');
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.flushHeaders();
    if (path.pathname === '/trickle') {
      const tick = setInterval(() => (ended ? clearInterval(tick) : ((written += 1), res.write('x'))), 50);
    } else if (path.pathname === '/flood') {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = (): void => {
        while (!ended) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    } else if (path.pathname === '/slow') {
      res.write('first ');
      setTimeout(() => res.end('last'), Number(path.searchParams.get('ms')));
    }
  });
  return { ...started, sockets };
}

async function failure(promise: Promise<unknown>): Promise<Error & { code?: string; reason?: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a failure');
}

describe('EgressService', () => {
  const servers: Server[] = [];
  const services: EgressService[] = [];
  let seen: Array<{ url?: string; authorization?: string }> = [];
  let port = 0;
  const make = (hosts: string[], timeout?: number) => {
    const s = egress(hosts, timeout);
    services.push(s);
    return s;
  };

  beforeAll(async () => {
    const started = await listen((req, res) => {
      seen.push({ url: req.url, authorization: req.headers.authorization });
      const target = new URL(req.url!, 'http://x');
      if (target.pathname === '/redirect') {
        res.writeHead(Number(target.searchParams.get('status') ?? 302), { location: target.searchParams.get('to')! });
        return res.end();
      }
      if (target.pathname === '/hang') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, method: req.method }));
    });
    servers.push(started.server);
    port = started.port;
  });
  beforeEach(() => (seen = []));
  afterAll(async () => {
    await Promise.all(services.map((s) => s.onModuleDestroy()));
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('refuses loopback by default: an address in the URL and a name that resolves to one', async () => {
    const none = make([]);
    const literal = await failure(none.fetch(`http://127.0.0.1:${port}/`));
    expect(literal).toBeInstanceOf(EgressRefusedError);
    expect(literal.code).toBe('egress_refused');
    // https to a name: nothing is judged from the URL; the socket's lookup refuses the address.
    const named = await failure(none.fetch(`https://localhost:${port}/`));
    expect(named).toBeInstanceOf(EgressRefusedError);
    expect(named.message).toMatch(/resolves to/);
    expect(seen).toHaveLength(0);
  });

  it('allows a loopback host listed by name, by address, or by CIDR range', async () => {
    for (const hosts of [['localhost'], ['127.0.0.1'], ['127.0.0.0/8']]) {
      const host = hosts[0] === 'localhost' ? 'localhost' : '127.0.0.1';
      const res = await make(hosts).fetch(`http://${host}:${port}/ok`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, method: 'POST' });
    }
  });

  it('follows a redirect to an allowed host, re-judged, and drops credentials across origins', async () => {
    const both = make(['127.0.0.1', 'localhost']);
    const res = await both.fetch(`http://127.0.0.1:${port}/redirect?to=${encodeURIComponent(`http://localhost:${port}/landed`)}`, {
      headers: { authorization: 'Bearer secret' },
    });
    expect(res.status).toBe(200);
    expect(seen.map((s) => s.url)).toEqual([expect.stringMatching(/^\/redirect/), '/landed']);
    expect(seen[0].authorization).toBe('Bearer secret');
    expect(seen[1].authorization).toBeUndefined();
  });

  it('refuses a redirect to a host the policy refuses', async () => {
    const one = make(['127.0.0.1']);
    for (const to of [`http://localhost:${port}/landed`, 'https://169.254.169.254/latest/meta-data', `http://10.0.0.1/`, 'file:///etc/passwd']) {
      const err = await failure(one.fetch(`http://127.0.0.1:${port}/redirect?status=307&to=${encodeURIComponent(to)}`));
      expect(err.code).toBe('egress_refused');
    }
    expect(seen.every((s) => s.url!.startsWith('/redirect'))).toBe(true);
  });

  it('a 303 becomes a GET; manual redirects are handed back', async () => {
    const one = make(['127.0.0.1']);
    const res = await one.fetch(`http://127.0.0.1:${port}/redirect?status=303&to=/ok`, { method: 'POST', body: 'x' });
    expect(await res.json()).toEqual({ ok: true, method: 'GET' });
    const manual = await one.fetch(`http://127.0.0.1:${port}/redirect?to=/ok`, { redirect: 'manual' });
    expect(manual.status).toBe(302);
  });

  it('gives up on a server that never answers, within the timeout asked for', async () => {
    const one = make(['127.0.0.1'], 5000);
    const started = Date.now();
    const err = await failure(one.fetch(`http://127.0.0.1:${port}/hang`, { timeoutMs: 200 }));
    expect(err).toBeInstanceOf(EgressTimeoutError);
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('never waits longer than EGRESS_TIMEOUT_MS, whatever the caller asks', async () => {
    const one = make(['127.0.0.1'], 200);
    const err = await failure(one.fetch(`http://127.0.0.1:${port}/hang`, { timeoutMs: 60_000 }));
    expect(err.code).toBe('timeout');
  });

  it("a caller's own abort stays an abort", async () => {
    const one = make(['127.0.0.1']);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('caller gave up')), 100);
    const err = await failure(one.fetch(`http://127.0.0.1:${port}/hang`, { signal: controller.signal }));
    expect(err.code).not.toBe('timeout');
  });

  it('holds at most EGRESS_MAX_CONNECTIONS_PER_ORIGIN sockets to one origin; the rest wait their turn, streams are not counted', async () => {
    let open = 0;
    let mostOpen = 0;
    const held = await listen((req, res) => {
      if (req.url === '/stream') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
      if (req.url === '/ok') return void res.end('ok');
    });
    servers.push(held.server);
    held.server.on('connection', (socket) => {
      mostOpen = Math.max(mostOpen, ++open);
      socket.once('close', () => open--);
    });
    const bounded = new EgressService(
      testConfig({ egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 2000, requestTimeoutMs: 5000, maxConnectionsPerOrigin: 3 } }),
    );
    services.push(bounded);
    const base = `http://127.0.0.1:${held.port}`;
    // Twenty requests the server never answers: one socket each before, a few thousand from one MCP server.
    const hanging = Array.from({ length: 20 }, () => failure(bounded.fetch(`${base}/hang`, { timeoutMs: 1500 })));
    await until(
      async () => open,
      (n) => n >= 3,
      5000,
    );
    // A stream meant to stay open still gets through, and is not held against the bound.
    const stream = await bounded.fetch(`${base}/stream`, { deadlineMs: Infinity });
    expect(stream.status).toBe(200);
    expect(mostOpen).toBe(4);
    // The waiting ones time out within their own limits, and the origin serves again.
    for (const err of await Promise.all(hanging)) expect(err.code).toBe('timeout');
    expect(await (await bounded.fetch(`${base}/ok`)).text()).toBe('ok');
    await stream.body!.cancel();
  });

  it("an organization's exchanges hold at most a quarter of an origin's sockets; another's are served meanwhile, and the turns go on as bodies are read", async () => {
    let open = 0;
    const held = await listen((req, res) => {
      if (req.url === '/hang') return; // never answers
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`ok ${req.url}`);
    });
    servers.push(held.server);
    held.server.on('connection', (socket) => {
      open++;
      socket.once('close', () => open--);
    });
    const shared = new EgressService(
      testConfig({ egress: { allowedHosts: ['127.0.0.1'], connectTimeoutMs: 2000, requestTimeoutMs: 5000, maxConnectionsPerOrigin: 8 } }),
    );
    services.push(shared);
    const base = `http://127.0.0.1:${held.port}`;
    // Organization a: ten requests the server never answers. Two sockets (a quarter of eight) are its; the rest wait.
    const callers = Array.from({ length: 10 }, () => new AbortController());
    const hanging = callers.map((c) => failure(shared.fetch(`${base}/hang`, { timeoutMs: 4000, share: 'a', signal: c.signal })));
    await until(
      async () => open,
      (n) => n >= 2,
      5000,
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(open).toBe(2);
    // Organization b is served at once, on sockets of its own.
    expect(await (await shared.fetch(`${base}/b`, { share: 'b' })).text()).toBe('ok /b');
    // A's waiting callers give up; their turns never reach the server. Its two hanging ones, ended, free their turns.
    for (const c of callers) c.abort(new Error('gone'));
    for (const err of await Promise.all(hanging)) expect(err.message).toMatch(/gone/);
    // And a's next requests run, one body after another, each turn passed on once its body is read.
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => shared.fetch(`${base}/a${i}`, { share: 'a' }).then((r) => r.text())));
    expect(answers).toEqual(['ok /a0', 'ok /a1', 'ok /a2', 'ok /a3', 'ok /a4']);
  });

  describe('after the headers', () => {
    let bad: Awaited<ReturnType<typeof misbehaving>>;
    beforeAll(async () => {
      bad = await misbehaving();
      servers.push(bad.server);
    });

    it('a body that trickles ends at the deadline asked for, as a timeout, and its socket is closed', async () => {
      const started = Date.now();
      const res = await make(['127.0.0.1'], 5000).fetch(`http://127.0.0.1:${bad.port}/trickle`, { timeoutMs: 300 });
      expect(res.status).toBe(200);
      const err = await failure(res.text());
      expect(err).toBeInstanceOf(EgressTimeoutError);
      expect(err.code).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(1500);
      const socket = await bad.sockets.at(-1)!;
      expect(socket.ms).toBeLessThan(1500);
    });

    it('the deadline defaults to EGRESS_TIMEOUT_MS, and holds whether or not the body is being read', async () => {
      const res = await make(['127.0.0.1'], 300).fetch(`http://127.0.0.1:${bad.port}/trickle`);
      // Nobody reads: the socket is closed all the same.
      const socket = await bad.sockets.at(-1)!;
      expect(socket.ms).toBeLessThan(1500);
      expect((await failure(res.text())).code).toBe('timeout');
    });

    it('a caller may allow a streamed body longer than EGRESS_TIMEOUT_MS, and reads it as it comes', async () => {
      const res = await make(['127.0.0.1'], 200).fetch(`http://127.0.0.1:${bad.port}/slow?ms=600`, { deadlineMs: 3000 });
      const reader = res.body!.getReader();
      const started = Date.now();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe('first ');
      expect(Date.now() - started).toBeLessThan(400);
      expect(new TextDecoder().decode((await reader.read()).value)).toBe('last');
      expect((await reader.read()).done).toBe(true);
    });

    it('a body past maxBytes fails as too large once that much is read, and its socket is closed', async () => {
      const res = await make(['127.0.0.1']).fetch(`http://127.0.0.1:${bad.port}/flood`, { maxBytes: 1024 * 1024 });
      const err = await failure(res.arrayBuffer());
      expect(err).toBeInstanceOf(EgressTooLargeError);
      expect(err.code).toBe('response_too_large');
      const socket = await bad.sockets.at(-1)!;
      // What the server got out is what was read plus what the kernel's buffers held, not an unbounded stream.
      expect(socket.written).toBeLessThan(16 * 1024 * 1024);
    });

    it("a caller's abort during the body stays an abort and closes the socket", async () => {
      const controller = new AbortController();
      const res = await make(['127.0.0.1']).fetch(`http://127.0.0.1:${bad.port}/trickle`, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);
      const err = await failure(res.text());
      expect(err.code).not.toBe('timeout');
      expect((await bad.sockets.at(-1)!).ms).toBeLessThan(1500);
    });
  });

  it('assertAllowed: 422 egress_refused naming the field; a bad URL is 400', async () => {
    const none = make([]);
    const refused = await failure(none.assertAllowed('http://127.0.0.1:1/mcp', 'url'));
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).status).toBe(422);
    expect((refused as ApiError).code).toBe('egress_refused');
    expect((refused as ApiError).errors).toEqual([expect.objectContaining({ path: 'url', code: 'egress_refused' })]);
    expect(((await failure(none.assertAllowed('https://localhost/mcp', 'url'))) as ApiError).code).toBe('egress_refused');
    expect(((await failure(none.assertAllowed('not a url', 'url'))) as ApiError).status).toBe(400);
    // What nothing could be sent to is malformed, whatever the policy would say of the host.
    const allowed = make(['localhost', '127.0.0.1']);
    for (const url of ['http://localhost.:4122/', 'https://localhost:0/', 'http://localhost:4122/a b', 'http://local\nhost:4122/', ' http://localhost/']) {
      const err = (await failure(allowed.assertAllowed(url, 'baseUrl'))) as ApiError;
      expect([url, err.status, err.errors]).toEqual([url, 400, [expect.objectContaining({ path: 'baseUrl', code: 'url' })]]);
    }
    // Credentials and other schemes are the policy's to refuse, as at connect time.
    for (const url of ['http://user:pw@localhost:4122/', 'ftp://localhost/']) {
      expect([url, ((await failure(allowed.assertAllowed(url, 'url'))) as ApiError).code]).toEqual([url, 'egress_refused']);
    }
    await expect(make(['127.0.0.1']).assertAllowed(`http://127.0.0.1:${port}/mcp`, 'url')).resolves.toBeUndefined();
  });
});
