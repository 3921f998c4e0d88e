import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../common/api-error';
import type { AppConfig } from '../config/app-config';
import { checkResolved, checkUrl, EgressRefusedError, parseAllowList } from './egress-policy';
import { EgressService } from './egress.service';

/**
 * EGRESS_ALLOWED_HOSTS entries with a port (attack round 11, F-F6): a host listed without one is
 * allowed at every port, so `127.0.0.1` for a local model server opened every loopback service to
 * every organization's URLs. `host:port` allows that port alone, whatever spells the host.
 */
describe('egress policy: hosts listed at a port', () => {
  const allow = parseAllowList(['127.0.0.1:11434', 'LocalHost:8080', '[::1]:9000', 'ollama.internal:11434']);

  it('parses host, address and bracketed IPv6 with a port; refuses ports out of range and hosts that are none', () => {
    for (const bad of ['localhost:0', 'localhost:65536', 'local host:80', '::1:80x', 'a/b:80']) expect(() => parseAllowList([bad])).toThrow();
  });

  it('allows the listed port only, however the address is spelled', () => {
    for (const ok of [
      'http://127.0.0.1:11434/v1',
      'http://127.1:11434/',
      'http://2130706433:11434/',
      'https://127.0.0.1:11434/',
      'http://[::1]:9000/',
      'http://localhost:8080/',
    ]) {
      expect(() => checkUrl(allow, new URL(ok))).not.toThrow();
    }
    for (const refused of [
      'http://127.0.0.1:6379/',
      'https://127.0.0.1/',
      'http://127.0.0.1/',
      'http://[::1]:9001/',
      'http://localhost:8081/',
      'https://[::ffff:127.0.0.1]:6379/',
    ]) {
      expect(() => checkUrl(allow, new URL(refused))).toThrow(EgressRefusedError);
    }
  });

  it("judges a name's addresses at the port connected to, and not at all when the port is not known", () => {
    expect(() => checkResolved(allow, 'ollama.internal', ['10.0.0.5'], 11434)).not.toThrow();
    expect(() => checkResolved(allow, 'ollama.internal', ['10.0.0.5'], 22)).toThrow(EgressRefusedError);
    expect(() => checkResolved(allow, 'ollama.internal', ['10.0.0.5'])).toThrow(EgressRefusedError);
  });

  describe('through the egress service', () => {
    let listed: Server;
    let other: Server;
    let egress: EgressService;
    const portOf = (s: Server) => (s.address() as AddressInfo).port;

    beforeAll(async () => {
      other = createServer((_req, res) => res.end('other service'));
      await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
      listed = createServer((req, res) => {
        if (req.url === '/hop') res.writeHead(307, { location: `http://localhost:${portOf(other)}/` }).end();
        else res.end('model server');
      });
      await new Promise<void>((resolve) => listed.listen(0, '127.0.0.1', resolve));
      egress = new EgressService({
        egress: { allowedHosts: [`localhost:${portOf(listed)}`], connectTimeoutMs: 2000, requestTimeoutMs: 2000 },
      } as unknown as AppConfig);
    });
    afterAll(async () => {
      await egress.onModuleDestroy();
      listed.close();
      other.close();
    });

    it('reaches the listed port, refuses another port of the same host, directly, by redirect and when saved', async () => {
      expect(await (await egress.fetch(`http://localhost:${portOf(listed)}/`)).text()).toBe('model server');
      await expect(egress.fetch(`http://localhost:${portOf(other)}/`)).rejects.toBeInstanceOf(EgressRefusedError);
      await expect(egress.fetch(`https://localhost:${portOf(other)}/`)).rejects.toMatchObject({ code: 'egress_refused' });
      await expect(egress.fetch(`http://localhost:${portOf(listed)}/hop`)).rejects.toBeInstanceOf(EgressRefusedError);
      await expect(egress.assertAllowed(`http://localhost:${portOf(listed)}/v1`, 'baseUrl')).resolves.toBeUndefined();
      await expect(egress.assertAllowed(`https://localhost:${portOf(other)}/v1`, 'baseUrl')).rejects.toBeInstanceOf(ApiError);
    });
  });
});
