import { ApiResponseOptions } from '@nestjs/swagger';

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
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

export function ProblemResponse(description: string): ApiResponseOptions {
  return { description, content: { 'application/problem+json': { schema: PROBLEM_SCHEMA } } };
}
