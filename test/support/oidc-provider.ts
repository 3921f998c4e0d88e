import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { OidcConfig } from '../../src/config/auth-config';

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface TokenOptions {
  /** Claims beside the defaults (iss, aud, sub, exp); `undefined` removes a default. */
  claims?: Record<string, unknown>;
  /** Seconds from now; negative for a token that has expired. */
  expiresIn?: number;
  kid?: string;
  /** Sign with this key instead of a published one (a forged token). */
  key?: CryptoKey;
  /** Header parameters beside alg and kid (`typ` is `at+jwt` unless given; `undefined` removes it). */
  header?: Record<string, unknown>;
}

/**
 * An identity provider on a loopback port, as a customer's would be: an OpenID discovery document
 * and a JWKS of keys it made itself with `jose`, and tokens signed by them. Keys rotate on demand,
 * and it counts what it is asked, so a test can see the server cache and refresh.
 */
export class TestIdentityProvider {
  issuer!: string;
  readonly audience = `https://gateway.test/${randomBytes(4).toString('hex')}`;
  /** Paths asked for, in order. */
  readonly requests: string[] = [];
  /** The headers of each request, in the same order. */
  readonly headers: http.IncomingHttpHeaders[] = [];
  private keys: SigningKey[] = [];
  private server!: http.Server;
  /** Tokens its introspection endpoint answers inactive (RFC 7662): revoked. */
  readonly revoked = new Set<string>();
  /** The client its introspection endpoint takes, by HTTP Basic (RFC 6749 2.3.1). */
  readonly client = { id: 'gateway:test', secret: `s3cret ${randomBytes(4).toString('hex')}` };
  /** What the introspection endpoint answers instead, when set (a provider down, or answering nonsense). */
  introspectionAnswer?: { status: number; body: string };

  /** The server's identity-provider settings for this provider (claims `org_id` and `roles`, a minute of skew); a suite names what it changes. */
  config(overrides: Partial<OidcConfig> = {}): OidcConfig {
    return {
      issuer: this.issuer,
      audience: this.audience,
      orgClaim: 'org_id',
      rolesClaim: 'roles',
      clockSkewSeconds: 60,
      keyRefreshCooldownMs: 300,
      keysMaxAgeMs: 600_000,
      ...overrides,
    };
  }

  /** Settings asking this provider's introspection endpoint about every token (for `config({ introspection })`). */
  introspection(cacheMs = 0): NonNullable<OidcConfig['introspection']> {
    return { url: `${this.issuer}/introspect`, clientId: this.client.id, clientSecret: this.client.secret, cacheMs };
  }

  static async start(): Promise<TestIdentityProvider> {
    const idp = new TestIdentityProvider();
    await idp.rotate();
    idp.server = http.createServer((req, res) => idp.handle(req, res));
    await new Promise<void>((resolve) => idp.server.listen(0, '127.0.0.1', resolve));
    idp.issuer = `http://127.0.0.1:${(idp.server.address() as { port: number }).port}`;
    return idp;
  }

  get currentKid(): string {
    return this.keys[this.keys.length - 1].kid;
  }

  /** Publishes a new key and signs with it from now on; `retire` drops the older ones from the JWKS. */
  async rotate(options: { retire?: boolean } = {}): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const kid = `k-${randomBytes(6).toString('hex')}`;
    const key = { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
    this.keys = options.retire ? [key] : [...this.keys, key];
    return kid;
  }

  async token(options: TokenOptions = {}): Promise<string> {
    const signer = this.keys[this.keys.length - 1];
    const claims: JWTPayload = { iss: this.issuer, aud: this.audience, sub: `user-${randomBytes(4).toString('hex')}`, ...options.claims };
    for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT(claims)
      .setProtectedHeader(headerOf({ alg: 'RS256', kid: options.kid ?? signer.kid, typ: 'at+jwt', ...options.header }))
      .setIssuedAt(now)
      .setExpirationTime(now + (options.expiresIn ?? 300))
      .sign(options.key ?? signer.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.requests.push(req.url ?? '');
    this.headers.push(req.headers);
    const send = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/openid-configuration') {
      return send({
        issuer: this.issuer,
        jwks_uri: `${this.issuer}/jwks`,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      });
    }
    if (req.url === '/jwks') return send({ keys: this.keys.map((k) => k.jwk) });
    if (req.url === '/introspect' && req.method === 'POST') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        if (this.introspectionAnswer) {
          res.writeHead(this.introspectionAnswer.status, { 'content-type': 'application/json' });
          return res.end(this.introspectionAnswer.body);
        }
        const part = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
        const expected = `Basic ${Buffer.from(`${part(this.client.id)}:${part(this.client.secret)}`).toString('base64')}`;
        if (req.headers.authorization !== expected) {
          res.writeHead(401, { 'content-type': 'application/json' });
          return res.end('{"error":"invalid_client"}');
        }
        const token = new URLSearchParams(body).get('token') ?? '';
        send(this.revoked.has(token) ? { active: false } : { active: true, token_type: 'access_token' });
      });
      return;
    }
    res.writeHead(404).end();
  }
}

function headerOf(header: Record<string, unknown>): { alg: string } {
  for (const [name, value] of Object.entries(header)) if (value === undefined) delete header[name];
  return header as { alg: string };
}
