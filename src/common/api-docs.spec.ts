import { Controller, Get } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiOperation, DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { Module } from '@nestjs/common';
import { Script, createContext } from 'node:vm';
import { escapeReplacementPatterns, setupApiDocs } from './api-docs';

// Every pattern String.prototype.replace expands in a string replacement, and the one that
// blanked /api/docs: a `$` then a backtick, as in a regular expression quoted in Markdown.
const NASTY = "Names match `^[a-z]$` or $` or $' or $& or $$ or $1 or $<name>, verbatim.";

@Controller('things')
class ThingsController {
  @Get()
  @ApiOperation({ operationId: 'listThings', summary: 'List things', description: NASTY })
  list(): string[] {
    return [];
  }
}

@Module({ controllers: [ThingsController] })
class ThingsModule {}

/** Runs the init script as the page does, with Swagger UI stubbed, and returns what it hands the UI. */
function runInitScript(source: string): { spec: unknown } {
  let handed: { spec: unknown } | undefined;
  const SwaggerUIBundle = Object.assign((options: { spec: unknown }) => ((handed = options), {}), { presets: { apis: {} }, plugins: { DownloadUrl: {} } });
  const window: { onload?: () => void; location: { search: string; origin: string } } = { location: { search: '', origin: 'http://127.0.0.1' } };
  const context = createContext({ window, SwaggerUIBundle, SwaggerUIStandalonePreset: {} });
  new Script(source, { filename: 'swagger-ui-init.js' }).runInContext(context);
  window.onload!();
  if (!handed) throw new Error('the init script never started Swagger UI');
  return handed;
}

describe('the API docs page', () => {
  let app: NestFastifyApplication;
  let document: OpenAPIObject;

  beforeAll(async () => {
    app = await NestFactory.create<NestFastifyApplication>(ThingsModule, new FastifyAdapter(), { logger: false });
    document = SwaggerModule.createDocument(app, new DocumentBuilder().setTitle('Costs in $ and $`').setVersion('1').build());
    setupApiDocs(app, document);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
  });
  afterAll(() => app.close());

  const get = (url: string) => app.getHttpAdapter().getInstance().inject({ method: 'GET', url });

  it('serves an init script that parses and hands Swagger UI the document exactly as /api/docs-json serves it', async () => {
    const init = await get('/api/docs/swagger-ui-init.js');
    expect(init.statusCode).toBe(200);
    const json = JSON.parse((await get('/api/docs-json')).body);
    expect(json.paths['/things'].get.description).toBe(NASTY);
    expect(runInitScript(init.body).spec).toEqual(json);
  });

  it('escapes the second path Nest serves the init script at too', async () => {
    const init = await get('/api/docs/docs/swagger-ui-init.js');
    expect(init.statusCode).toBe(200);
    expect(runInitScript(init.body).spec).toEqual(JSON.parse((await get('/api/docs-json')).body));
  });

  it('leaves the JSON and YAML documents unescaped', async () => {
    expect(JSON.parse((await get('/api/docs-json')).body).info.title).toBe('Costs in $ and $`');
    expect((await get('/api/docs-yaml')).body).toContain('title: Costs in $ and $`');
  });

  it('serializes each document once, not on every request (anonymous requests held the event loop)', async () => {
    const first = await Promise.all(['/api/docs-json', '/api/docs-yaml', '/api/docs/swagger-ui-init.js'].map((url) => get(url)));
    // What a request would serialize anew shows a change to the document; what was serialized once does not.
    const title = document.info.title;
    document.info.title = 'changed after the first requests';
    try {
      const again = await Promise.all(['/api/docs-json', '/api/docs-yaml', '/api/docs/swagger-ui-init.js'].map((url) => get(url)));
      expect(again.map((r) => r.body)).toEqual(first.map((r) => r.body));
      expect(again.map((r) => r.headers['content-type'])).toEqual(['application/json; charset=utf-8', 'text/yaml; charset=utf-8', 'application/javascript']);
    } finally {
      document.info.title = title;
    }
  });

  it('doubles every $ in keys and values, leaving other values alone', () => {
    expect(escapeReplacementPatterns({ a$: ['$`', 1, null, true, { b: "$'" }] })).toEqual({ a$$: ['$$`', 1, null, true, { b: "$$'" }] });
  });
});
