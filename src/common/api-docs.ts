import type { INestApplication } from '@nestjs/common';
import { OpenAPIObject, SwaggerCustomOptions, SwaggerModule } from '@nestjs/swagger';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, RouteOptions } from 'fastify';
import { dump } from 'js-yaml';
import { pageSecurityHeaders } from './page-security-headers';

export const API_DOCS_PATH = 'api/docs';

/**
 * The docs page is where people paste a bearer token (Authorize) and press Execute on `DELETE`
 * routes. Swagger UI's scripts are all files of its own (no inline script, no eval), so
 * `script-src 'self'` holds; its page carries inline `<style>` blocks and React sets `style`
 * attributes, hence inline styles; its fonts are `data:` URLs. Execute calls this origin only.
 */
export const API_DOCS_SECURITY_HEADERS = pageSecurityHeaders({ inlineStyles: true, dataFonts: true });

/**
 * Gives every route under `/api/docs` (the page, its init script, Swagger UI's files and the
 * documents) the headers above, as each route is added: a hook of those routes alone, so no other
 * request pays for a check of its path. Must run before the routes are added.
 */
export function lockDownApiDocs(fastify: FastifyInstance): void {
  const headers = Object.entries(API_DOCS_SECURITY_HEADERS);
  const setHeaders = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    for (const [name, value] of headers) void reply.header(name, value);
    done(null, payload);
  };
  const prefix = `/${API_DOCS_PATH}`;
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith(prefix)) return;
    const own = route.onSend === undefined ? [] : [route.onSend].flat();
    route.onSend = [...own, setHeaders as onSendHookHandler];
  });
}

/**
 * `$` doubled in every string of the document (keys included), so that the document survives being
 * used as the replacement string of `String.prototype.replace`.
 *
 * Why: @nestjs/swagger 11.4.7 builds `swagger-ui-init.js` with
 * `jsTemplateString.replace('<% swaggerOptions %>', json)`, a *string* replacement, so the
 * patterns `` $` ``, `$'`, `$&`, `$$` in the document are expanded. One description holding
 * `` `^[a-z]…$` `` (a `$` then a backtick) pasted the template's head into the middle of the JSON
 * and `/api/docs` rendered a blank page. With every `$` doubled, the replacement turns each `$$`
 * back into the one `$` we meant. Upstream fix: nestjs/swagger pull request 4119 ("preserve $
 * characters when building swagger-ui-init.js", a callback replacement). Once a release with it
 * is installed, the doubled `$` would show: `src/common/api-docs.spec.ts` compares the document
 * the init script carries with the served JSON and fails then, which is the signal to delete this.
 */
export function escapeReplacementPatterns<T>(value: T): T {
  if (typeof value === 'string') return value.replace(/\$/g, '$$$$') as T;
  if (Array.isArray(value)) return value.map((v) => escapeReplacementPatterns(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[escapeReplacementPatterns(k)] = escapeReplacementPatterns(v);
    return out as T;
  }
  return value;
}

/**
 * Serves the interactive docs at `/api/docs` and the document at `/api/docs-json` and
 * `/api/docs-yaml`, each serialized once, on its first request. Swagger's own routes for them
 * serialize on every request (44 to 66 ms of CPU a YAML dump of this 560 KB document; and the init
 * script was built for each request while the document was patched per request to escape it):
 * anonymous and not rate limited, 16 requests a second held the event loop and every
 * organization's requests waited 200 times longer (attack round 6). The JSON and YAML carry the
 * document as it is; the page's init script, built once by Swagger, carries the escaped copy.
 */
export function setupApiDocs(app: INestApplication, document: OpenAPIObject, options: SwaggerCustomOptions = {}): void {
  const fastify = app.getHttpAdapter().getInstance() as FastifyInstance;
  lockDownApiDocs(fastify);
  SwaggerModule.setup(API_DOCS_PATH, app, escapeReplacementPatterns(document), { ...options, raw: false });
  let json: Buffer | undefined;
  let yaml: Buffer | undefined;
  fastify.get(`/${API_DOCS_PATH}-json`, (_request, reply) =>
    reply.type('application/json; charset=utf-8').send((json ??= Buffer.from(JSON.stringify(document), 'utf8'))),
  );
  fastify.get(`/${API_DOCS_PATH}-yaml`, (_request, reply) =>
    reply.type('text/yaml; charset=utf-8').send((yaml ??= Buffer.from(dump(document, { skipInvalid: true, noRefs: true }), 'utf8'))),
  );
}
