import type { Type } from '@nestjs/common';
import { ApiResponseOptions, OpenAPIObject } from '@nestjs/swagger';

/** The problem document schema (RFC 9457), referenced by every error answer in the OpenAPI document. */
export const PROBLEM_SCHEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', description: 'Stable snake_case error code; branch on this.' },
    instance: { type: 'string' },
    errors: {
      type: 'array',
      maxItems: 50,
      description: 'At most 50 entries; `errorsOmitted` counts the rest.',
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
      },
    },
    errorsOmitted: { type: 'integer', description: 'How many problems `errors[]` leaves out (present only when it does).' },
  },
  example: {
    type: 'urn:capability-platform:problem:invalid_request',
    title: 'Bad Request',
    status: 400,
    detail: 'The request body is invalid.',
    code: 'invalid_request',
    instance: '/api/v1/agents',
    errors: [{ path: 'slug', code: 'matches', message: 'slug must be lowercase letters, digits and hyphens' }],
  },
};

export function ProblemResponse(description: string): ApiResponseOptions {
  return { description, content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } } };
}

/**
 * The refusals every route of a kind can give, whatever its handler: a body or query that fails
 * validation (400), a body over 1 MiB (413) or not JSON in UTF-8 (415), a token over its rate limit (429). Added to the
 * document once here rather than repeated on every route; a route's own description of a status
 * is kept.
 */
export function addCommonProblems(document: OpenAPIObject): OpenAPIObject {
  const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } } });
  const common = {
    invalid: problem('The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`.'),
    tooLarge: problem('The body is larger than 1 MiB (`payload_too_large`).'),
    unsupported: {
      ...problem(
        'The body is not JSON in UTF-8 (`unsupported_media_type`): another media type, a `charset` other than `utf-8` (`errors[0].path` `Content-Type`), ' +
          'or a `Content-Encoding` other than `identity` (`errors[0].path` `Content-Encoding`; the body is not read).',
      ),
      headers: {
        'Accept-Encoding': { description: 'On a refused content coding: `identity`, the only one accepted.', schema: { type: 'string', example: 'identity' } },
      },
    },
    limited: {
      ...problem(
        'Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds. ' +
          "Limits are per window (`RATE_LIMIT_WINDOW_SECONDS`). A key's or organization's limit also sends `RateLimit-*` (`RateLimit-Remaining` 0), " +
          'as every answer to an authenticated request does, so a client can slow down before this answer; the per-address limit on failed sign-ins sends `Retry-After` only.',
      ),
      headers: {
        'Retry-After': { description: 'Seconds until the window that refused the request ends.', schema: { type: 'integer', minimum: 1, example: 12 } },
        ...RATE_LIMIT_HEADER_REFS,
      },
    },
  };
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const op = item[method];
      if (!op) continue;
      const responses = op.responses;
      const hasQuery = (op.parameters ?? []).some((p) => 'in' in p && p.in === 'query');
      if ((op.requestBody || hasQuery) && !responses['400']) responses['400'] = common.invalid;
      if (op.requestBody && !responses['413']) responses['413'] = common.tooLarge;
      if (op.requestBody && !responses['415']) responses['415'] = common.unsupported;
      if (op.security?.length && !responses['429']) responses['429'] = common.limited;
      if (op.security?.length) withRateLimitHeaders(responses);
      // A route's own 429 that is a rate limit sends Retry-After and RateLimit-* too.
      const own = responses['429'] as { description?: string; headers?: Record<string, unknown> } | undefined;
      if (own && own !== common.limited && own.description?.includes('rate_limited')) own.headers = { ...common.limited.headers, ...own.headers };
      // API.md: ids are UUIDs, and every id in a path is checked as one (404 otherwise).
      for (const param of op.parameters ?? []) {
        if (!('in' in param) || param.in !== 'path' || !(param.name === 'id' || /[a-z]Id$/.test(param.name))) continue;
        const schema = param.schema as { type?: string; format?: string } | undefined;
        if (schema?.type === 'string' && !schema.format) schema.format = 'uuid';
      }
    }
  }
  integersAsIntegers(document);
  document.components = { ...document.components, headers: { ...document.components?.headers, ...RATE_LIMIT_HEADERS } };
  return referenceProblem(document);
}

/**
 * What the auth guard sends on every answer to an authenticated request (docs/operations.md, IETF
 * draft `ratelimit-headers` 07), for the tighter of the key's and the organization's limits; absent
 * only when neither limit is configured (`RATE_LIMIT_PER_KEY` and `RATE_LIMIT_PER_ORG` both 0).
 */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': {
    description: "Requests allowed per window by the tighter of the key's and the organization's limits (absent when neither is configured).",
    schema: { type: 'integer', minimum: 1, example: 1200 },
  },
  'RateLimit-Remaining': { description: 'Requests left in the current window under that limit.', schema: { type: 'integer', minimum: 0, example: 1199 } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends.', schema: { type: 'integer', minimum: 0, example: 60 } },
};
const RATE_LIMIT_HEADER_REFS = Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]));

/** Every successful (and 429) answer of an authenticated route names the RateLimit-* headers it carries. */
function withRateLimitHeaders(responses: Record<string, unknown>): void {
  for (const [status, response] of Object.entries(responses)) {
    if (!/^(2\d\d|429)$/.test(status) || !response || typeof response !== 'object' || '$ref' in response) continue;
    const r = response as { headers?: Record<string, unknown> };
    r.headers = { ...RATE_LIMIT_HEADER_REFS, ...r.headers };
  }
}

/**
 * Nest writes every TypeScript `number` as `type: number`; in this API each one (a count, a
 * version, a limit, an HTTP status, a length) is a whole number, and a generated client should
 * say so. A fractional field must say `format: double` (or float) and is left alone.
 */
function integersAsIntegers(document: OpenAPIObject): void {
  const seen = new Set<object>();
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) return node.forEach(visit);
    const n = node as Record<string, unknown>;
    if (n.type === 'number' && n.format === undefined) n.type = 'integer';
    // Examples are data, not schemas, even when they look like one.
    for (const [k, v] of Object.entries(n)) if (k !== 'example' && k !== 'examples') visit(v);
  };
  visit(document.paths);
  visit(document.components?.schemas);
}

/**
 * Every error answer names one `Problem` schema instead of repeating it inline, so a client
 * generated from the document (the console's) gets one type for every refusal, and the document
 * is a fraction of its size.
 */
function referenceProblem(document: OpenAPIObject): OpenAPIObject {
  const inline = JSON.stringify(PROBLEM_SCHEMA);
  document.components = { ...document.components, schemas: { ...document.components?.schemas, Problem: PROBLEM_SCHEMA } };
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      for (const response of Object.values(item[method]?.responses ?? {})) {
        const content = response && 'content' in response ? response.content?.['application/problem+json'] : undefined;
        if (content?.schema && JSON.stringify(content.schema) === inline) content.schema = { $ref: '#/components/schemas/Problem' };
      }
    }
  }
  return document;
}

/** @nestjs/swagger's metadata keys (its `DECORATORS`, not exported by the package). */
const DECORATORS = {
  API_PARAMETERS: 'swagger/apiParameters',
  API_MODEL_PROPERTIES: 'swagger/apiModelProperties',
  API_MODEL_PROPERTIES_ARRAY: 'swagger/apiModelPropertiesArray',
} as const;

/**
 * Documents a route's query as `@Query() query: cls` would, for a handler that reads and validates
 * its query itself (the catalog: docs/benchmarks.md, issue 21). `@ApiQuery({ type: cls })` is not
 * the same: it drops its properties' enums. This gives @nestjs/swagger the very parameters it
 * derives from a `@Query()` class (each property's own `@ApiProperty` options, required unless it
 * says otherwise), so the document does not change.
 */
export function ApiQueryOf(cls: Type<object>): MethodDecorator {
  return (_target, _key, descriptor) => {
    const prototype = cls.prototype as object;
    const names = ((Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, prototype) as unknown[] | undefined) ?? [])
      .filter((k): k is string => typeof k === 'string' && k.startsWith(':'))
      .map((k) => k.slice(1));
    const parameters = names.map((name) => {
      const declared = (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, prototype, name) as Record<string, unknown> | undefined) ?? {};
      // As swagger merges them (its ParametersMetadataMapper), so that even the keys' order is the same.
      return Object.assign({ type: cls, name: undefined, required: true, in: 'query' }, declared, { name: (declared.name as string | undefined) || name });
    });
    const existing = (Reflect.getMetadata(DECORATORS.API_PARAMETERS, descriptor.value as object) as unknown[] | undefined) ?? [];
    Reflect.defineMetadata(DECORATORS.API_PARAMETERS, [...existing, ...parameters], descriptor.value as object);
    return descriptor;
  };
}
