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
};

export function ProblemResponse(description: string): ApiResponseOptions {
  return { description, content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } } };
}

/**
 * The refusals every route of a kind can give, whatever its handler: a body or query that fails
 * validation (400), a body over 1 MiB (413), a token over its rate limit (429). Added to the
 * document once here rather than repeated on every route; a route's own description of a status
 * is kept.
 */
export function addCommonProblems(document: OpenAPIObject): OpenAPIObject {
  const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } } });
  const common = {
    invalid: problem('The body or the query is invalid (`invalid_request`); `errors[]` names each problem by `path`.'),
    tooLarge: problem('The body is larger than 1 MiB (`payload_too_large`).'),
    limited: problem('Too many requests for this key, organization or address (`rate_limited`); retry after `Retry-After` seconds.'),
  };
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const op = item[method];
      if (!op) continue;
      const responses = op.responses;
      const hasQuery = (op.parameters ?? []).some((p) => 'in' in p && p.in === 'query');
      if ((op.requestBody || hasQuery) && !responses['400']) responses['400'] = common.invalid;
      if (op.requestBody && !responses['413']) responses['413'] = common.tooLarge;
      if (op.security?.length && !responses['429']) responses['429'] = common.limited;
    }
  }
  return referenceProblem(document);
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
