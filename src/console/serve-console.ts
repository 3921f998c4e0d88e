import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pageSecurityHeaders } from '../common/page-security-headers';
import { PROBLEM_CONTENT_TYPE, problemType } from '../common/problem.filter';

export const CONSOLE_PATH = '/console';

/**
 * The console is a bundle of static files: an API key typed into it is the only secret it ever
 * holds, so the page is locked down to its own origin. Vite emits no inline script or style, so
 * none is allowed. Its URLs carry ids, never tokens, but they are still nobody else's business.
 */
const SECURITY_HEADERS = pageSecurityHeaders();

/**
 * Where `npm run build` puts the console: `dist/console` at the package root, beside the compiled
 * server, so a production image that ships `dist/` ships the console. Found by walking up to the
 * package.json, because this file runs from `src/console` under ts tooling and from
 * `dist/src/console` once compiled.
 */
export function defaultConsoleDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'dist', 'console');
    dir = resolve(dir, '..');
  }
  return resolve(process.cwd(), 'dist', 'console');
}

function notFound(reply: FastifyReply, detail: string): FastifyReply {
  return reply
    .code(404)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    .send(JSON.stringify({ type: problemType('not_found'), title: 'Not Found', status: 404, detail, code: 'not_found' }));
}

/**
 * Serves the built console at `/console`: hashed assets with a year of caching, and `index.html`
 * (never cached, so a new build is picked up at the next load) for every other path under
 * `/console`, because the app routes in the browser. A path that looks like a file and is not one
 * is a 404, not the page: a stale asset URL must fail loudly, not load HTML as a script.
 */
export async function registerConsole(fastify: FastifyInstance, consoleDir = defaultConsoleDir()): Promise<void> {
  const indexFile = join(consoleDir, 'index.html');
  const built = existsSync(indexFile);
  const indexHtml = built ? readFileSync(indexFile) : undefined;

  await fastify.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply) => {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    });
    if (built) {
      await scope.register(fastifyStatic, {
        root: join(consoleDir, 'assets'),
        prefix: `${CONSOLE_PATH}/assets/`,
        decorateReply: false,
        index: false,
        dotfiles: 'deny',
        immutable: true,
        maxAge: '365d',
      });
    }
    const page = async (request: { url: string }, reply: FastifyReply) => {
      if (!indexHtml) return notFound(reply, 'The console has not been built: run `npm run build`, then restart the server.');
      const path = request.url.split('?')[0];
      const last = path.slice(path.lastIndexOf('/') + 1);
      if (last.includes('.')) return notFound(reply, 'No such file in the console.');
      return reply.code(200).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-cache').send(indexHtml);
    };
    scope.get(CONSOLE_PATH, page);
    scope.get(`${CONSOLE_PATH}/*`, page);
  });
}
