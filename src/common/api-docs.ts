import type { INestApplication } from '@nestjs/common';
import { OpenAPIObject, SwaggerCustomOptions, SwaggerModule } from '@nestjs/swagger';

export const API_DOCS_PATH = 'api/docs';

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
 * `/api/docs-yaml`. The JSON and YAML carry the document as it is; only the init script of the
 * page gets the escaped copy (built once, on its first request).
 */
export function setupApiDocs(app: INestApplication, document: OpenAPIObject, options: SwaggerCustomOptions = {}): void {
  let escaped: OpenAPIObject | undefined;
  SwaggerModule.setup(API_DOCS_PATH, app, document, {
    jsonDocumentUrl: `${API_DOCS_PATH}-json`,
    yamlDocumentUrl: `${API_DOCS_PATH}-yaml`,
    ...options,
    patchDocumentOnRequest: (req: unknown, _res: unknown, doc: OpenAPIObject) => {
      const url = (req as { url?: string }).url ?? '';
      if (!url.split('?')[0].endsWith('/swagger-ui-init.js')) return doc;
      escaped ??= escapeReplacementPatterns(doc);
      return escaped;
    },
  });
}
