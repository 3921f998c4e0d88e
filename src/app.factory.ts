import { ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { setupApiDocs } from './common/api-docs';
import { Logger } from 'nestjs-pino';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppModule, AppModuleOptions } from './app.module';
import { createValidationPipe } from './common/validation';
import { AppConfig } from './config/app-config';
import { DEFAULT_HTTP_LIMITS, DEFAULT_HTTP_TIMEOUTS } from './config/http-config';
import { bodyShapeRefusal, MAX_JSON_DEPTH, MAX_JSON_KEYS } from './common/json-depth';
import { jsonShapeRefusal } from './common/json-shape';
import { findUnstorableNumber, mayHoldUnstorableNumber } from './common/json-numbers';
import { findUnstorableText } from './common/nul-character';
import { jsonBodyText, unsupportedContentEncoding } from './common/body-encoding';
import { boundBufferedBodies } from './common/body-budget';
import { boundUnsentAnswers } from './common/answer-budget';
import { refuseAnonymousRequests } from './auth/anonymous-requests';
import { AuthService } from './auth/auth.service';
import type { AuthenticatedRequest } from './auth/ctx.decorator';
import { budgetOwnerOf } from './auth/principal';
import { ResourceChallenge } from './auth/oidc/resource-challenge.service';
import { RateLimiter } from './rate-limit/rate-limiter.service';
import { ApiError, titleFor } from './common/api-error';
import { PROBLEM_CONTENT_TYPE, toProblem } from './common/problem.filter';
import { addCommonProblems } from './common/openapi';
import { addExamples } from './common/openapi-examples';
import { operationIdFor } from './common/operation-ids';
import { Metrics } from './telemetry/metrics';
import { registerConsole } from './console/serve-console';
import { capConnections, reapIdleConnectionsWhileClosing } from './common/connections';
import { addressGroupOf } from './common/client-address';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * The longest path segment the router takes (Fastify's default is 100). The longest one a client
 * must send is an MCP tool's id in a path, `<connection>/<tool>` percent-encoded: 63 + 3 + 128
 * characters of up to 4 UTF-8 bytes, 12 characters each, 1,602 in all. Longer is 414 uri_too_long.
 */
export const MAX_PARAM_LENGTH = 2048;

// MCP clients in a browser send the protocol version on every request after the first, and the
// 2026-07-28 revision's clients the method and name too. No Mcp-Session-Id: the endpoint is
// stateless and never issues one, so none is sent back (nor exposed).
// Prefer: `wait=N` on POST /agents/{id}/runs (not a CORS-safelisted header: without it the browser refuses the request).
export const CORS_ALLOWED_HEADERS =
  'Authorization, Content-Type, Idempotency-Key, Last-Event-ID, Prefer, x-request-id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name';
// A browser MCP client signing in reads WWW-Authenticate on a 401 (RFC 9728: where the metadata is);
// RateLimit-* say how much is left (docs/operations.md); Preference-Applied says a Prefer: wait was honoured.
export const CORS_EXPOSED_HEADERS = 'Retry-After, x-request-id, WWW-Authenticate, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Preference-Applied';
const CORS_METHODS = 'GET, POST, PUT, DELETE';

/**
 * CORS for the origins in `CORS_ORIGINS`, and for no other: a request from elsewhere gets no CORS
 * header, so the browser keeps the answer from the page. Preflights are answered here, before
 * routing and authentication: a browser sends them without the Authorization header.
 */
function installCors(fastify: FastifyInstance, origins: string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins);
  fastify.addHook('onRequest', async (request, reply) => {
    // The answer depends on Origin, so a shared cache must not hand one origin's answer to another.
    reply.header('Vary', 'Origin');
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !allowed.has(origin)) return;
    reply.header('Access-Control-Allow-Origin', origin);
    reply.header('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      reply.header('Access-Control-Allow-Methods', CORS_METHODS);
      reply.header('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS);
      reply.header('Access-Control-Max-Age', '600');
      return reply.code(204).send();
    }
  });
}
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAY_BE_UNSTORABLE = /\\u(?:0000|d[89a-f])/i;

export interface CreateAppOptions {
  config: AppConfig;
  database: { url: string; poolSize: number };
  imports?: ModuleMetadata['imports'];
  rateLimitStore?: AppModuleOptions['rateLimitStore'];
  /** Tests keep the output quiet; the server logs JSON lines. */
  logger?: boolean;
  /** The built console to serve at /console; default `dist/console` (tests build one of their own). */
  consoleDir?: string;
}

/** The path of a refused URL, as a problem's `instance`: cut, and only when it is printable. */
function safeInstance(url: string | undefined): string | undefined {
  const path = (url ?? '').split('?')[0];
  return /^[\x21-\x7e]{1,200}$/.test(path) ? path : undefined;
}

/** A number of proxies in front as the hop test Fastify applies to a number (its types take none). */
function trustProxyOf(setting: AppConfig['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return setting ?? false;
}

/** Builds the whole HTTP application, the same way for `npm start` and for every e2e test. */
export async function createApp(options: CreateAppOptions): Promise<NestFastifyApplication> {
  const timeouts = options.config.httpTimeouts ?? DEFAULT_HTTP_TIMEOUTS;
  const limits = options.config.httpLimits ?? DEFAULT_HTTP_LIMITS;
  // Answers written on the socket, never reaching Fastify's hooks, are counted too (once Metrics exists).
  const unparsed: { answered?: (status: number) => void } = {};
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // Behind a load balancer every request comes from its address: TRUST_PROXY names it, so the
    // address limits count clients, and the sign-in metadata names the scheme and host they called.
    trustProxy: trustProxyOf(options.config.trustProxy),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Slow clients (a byte every few seconds) would hold a connection, and its memory, for as long
    // as they like, before authentication. Node answers 408 (through clientErrorHandler below)
    // when the headers, or the whole request with its body, take longer than this; it looks every
    // `connectionsCheckingInterval`, so that is kept well under the shortest timeout.
    requestTimeout: timeouts.requestMs,
    connectionTimeout: timeouts.idleMs,
    // Between two requests a connection is kept this long, not Fastify's 72 s (meant for a load
    // balancer in front; docs/operations.md): one request per connection every 72 s let a single
    // client hold 20,000 connections.
    keepAliveTimeout: timeouts.keepAliveMs,
    http: {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(Math.min(timeouts.headersMs, timeouts.requestMs) / 4))),
      // Node would answer a missing Host itself, with a bare 400; it is refused below, as a problem document.
      requireHostHeader: false,
    },
    // Refusals of Fastify's router (a path segment that is not UTF-8 or is over-long) are problem
    // documents with a request id, like every other error.
    frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
      const status = (error as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : 400;
      const detail = status === 414 ? 'A path segment is too long.' : 'The request path is not a valid URL (a percent-escape that is not UTF-8?).';
      const problem = { ...toProblem(new ApiError(status === 414 ? 'uri_too_long' : 'invalid_request', detail)).problem, instance: safeInstance(request.url) };
      // Answered before any hook runs: the headers every answer carries are set here.
      void reply
        .status(status)
        .header('x-request-id', String(request.id))
        .header('x-content-type-options', 'nosniff')
        .type(PROBLEM_CONTENT_TYPE)
        .send(JSON.stringify(problem));
    },
    // While stopping, requests already on an open connection are served, not answered 503.
    return503OnClosing: false,
    // Requests the HTTP parser refuses (URL or headers too large, malformed) never reach Nest;
    // they still get a problem document.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: import('node:net').Socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const body = JSON.stringify(toProblem(Object.assign(new Error(err.message), { statusCode: status })).problem);
      unparsed.answered?.(status);
      // No request was parsed, so no request id was given: one is made, for the logs to join on.
      socket.end(
        `HTTP/1.1 ${status} ${titleFor(status)}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nx-request-id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    // A caller's request id is kept when it is sane, so logs join across services.
    genReqId: (req: IncomingMessage) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
      (req as IncomingMessage & { requestId?: string }).requestId = id;
      return id;
    },
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config: options.config, database: options.database, imports: options.imports, rateLimitStore: options.rateLimitStore }),
    adapter,
    // Fastify parses JSON itself; Nest's parser is off so ours (below) is the only one.
    { bufferLogs: true, bodyParser: false, logger: options.logger === false ? false : undefined },
  );
  if (options.logger !== false) app.useLogger(app.get(Logger));
  app.useGlobalPipes(createValidationPipe());

  const fastify = app.getHttpAdapter().getInstance();
  // Plain JSON.parse, behind bounds on depth and distinct member names (common/json-shape.ts). `__proto__`
  // is then an own data property, never the prototype: data where an object is free-form, an unknown
  // property where not (common/bounded-transform.ts); Fastify's parser refused such a body whole.
  fastify.removeContentTypeParser('application/json');
  // JSON in (API.md): a text/plain body is 415 unsupported_media_type, not a string that fails
  // validation field by field.
  fastify.removeContentTypeParser('text/plain');
  // Before any byte of the body is read: what it would be decoded as is already known.
  fastify.addHook('preParsing', (request, _reply, payload, done) => {
    const refused = unsupportedContentEncoding(request.headers);
    if (refused) done(refused, undefined);
    else done(null, payload);
  });
  const bodies = boundBufferedBodies(fastify, limits.maxBufferedBodyBytes, limits.maxConnections, limits.bodyParseMsPerOrg);
  boundUnsentAnswers(fastify, (request) => {
    const principal = (request as AuthenticatedRequest).principal;
    return principal ? budgetOwnerOf(principal) : `address:${addressGroupOf(request.ip)}`;
  });
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const text = jsonBodyText(request.headers['content-type'], body as Buffer);
    if (text instanceof ApiError) {
      done(text, undefined);
      return;
    }
    // Many clients send `Content-Type: application/json` on every POST; a route without a body
    // (publish, validate) must not refuse them for an empty one.
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    const refused = jsonShapeRefusal(body as Buffer, MAX_JSON_DEPTH, MAX_JSON_KEYS);
    if (refused !== null) {
      done(bodyShapeRefusal(refused), undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = bodies.parseTime.parse(request, text);
    } catch {
      done(Object.assign(new Error('The request body is not valid JSON.'), { statusCode: 400 }), undefined);
      return;
    }
    // Text PostgreSQL cannot store (common/nul-character.ts) can only arrive in JSON as an escape
    // (\u0000, \uD800-\uDFFF: raw control characters are not JSON, and bytes that are not UTF-8
    // are refused above), so the parsed value is walked only when the text holds one. A megabyte
    // body costs one native scan, not a walk of every key.
    if (MAY_BE_UNSTORABLE.test(text)) {
      const found = findUnstorableText(parsed);
      if (found) {
        done(ApiError.invalidRequest([found]), undefined);
        return;
      }
    }
    // Likewise a number literal past a double's range, which JSON.parse makes Infinity, or numbers stored far longer than written (common/json-numbers.ts).
    if (mayHoldUnstorableNumber(text)) {
      const found = findUnstorableNumber(parsed);
      if (found) {
        done(ApiError.invalidRequest([found]), undefined);
        return;
      }
    }
    done(null, parsed);
  });
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', String(request.id));
  });
  fastify.addHook('onRequest', (request, reply, done) => {
    // Every answer is what its Content-Type says (JSON, a problem document, an event stream): no
    // browser may sniff one into a script or a page. Set before anything answers, so that replies
    // written by hand (event streams, MCP), which copy the headers set so far, carry it too.
    void reply.header('x-content-type-options', 'nosniff');
    // An API answer is its caller's alone (a key's token shown once, results, the audit log): no cache, a browser's disk included, keeps it.
    if (request.url.startsWith('/api/v1/')) void reply.header('cache-control', 'no-store');
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (Node's own answer had no body).
    if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return done();
    void reply
      .status(400)
      .type(PROBLEM_CONTENT_TYPE)
      .send(
        JSON.stringify(
          toProblem(ApiError.invalidRequest([{ path: 'Host', code: 'required', message: 'an HTTP/1.1 request must carry a Host header' }])).problem,
        ),
      );
  });
  // An Expect other than 100-continue: Node answers 417 itself, bare, unless someone listens.
  fastify.server.on('checkExpectation', (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    unparsed.answered?.(417);
    const body = JSON.stringify(toProblem(new ApiError('expectation_failed', 'Only Expect: 100-continue is supported.')).problem);
    res
      .writeHead(417, {
        'content-type': PROBLEM_CONTENT_TYPE,
        'content-length': Buffer.byteLength(body),
        'x-content-type-options': 'nosniff',
        'x-request-id': randomUUID(),
        connection: 'close',
      })
      .end(body);
  });
  reapIdleConnectionsWhileClosing(fastify);
  const connections = capConnections(fastify, limits.maxConnections);
  installCors(fastify, options.config.corsOrigins);
  // After CORS: a browser reads the 401 only with its Access-Control-Allow-Origin.
  refuseAnonymousRequests(fastify, app.get(RateLimiter), app.get(ResourceChallenge), app.get(AuthService), bodies, connections);
  await registerConsole(fastify, options.consoleDir);
  // By route template (`/api/v1/agents/:agentId`), never the URL, so the label stays bounded.
  const metrics = app.get(Metrics);
  unparsed.answered = (status) => metrics.httpRequestUnparsed(status);
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  const document = addExamples(
    addCommonProblems(
      SwaggerModule.createDocument(
        app,
        new DocumentBuilder()
          .setTitle('Capability platform API')
          .setDescription(
            'Assemble AI agents from capabilities, publish immutable versions, and run their tools behind scope, budget and approval guards. Errors are RFC 9457 problem documents with a stable `code`.',
          )
          .setVersion('1')
          .addBearerAuth({
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'opaque API key',
            description:
              'An opaque API key (`cpk_…`, made by `POST /api/v1/orgs/{orgId}/api-keys` and shown once) or the platform admin token. ' +
              'Not a JWT: nothing in it is meant to be read; it is looked up on every request, so a revoked key is refused at once. ' +
              "When `OIDC_ISSUER` is set, also a JWT access token of the organization's identity provider (docs/security.md).",
          })
          .build(),
        { operationIdFactory: operationIdFor },
      ),
    ),
  );
  setupApiDocs(app, document);
  return app;
}
