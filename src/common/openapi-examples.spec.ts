import { ExampleBuilder, problemExample } from './openapi-examples';

describe('OpenAPI examples', () => {
  it("a refusal's example carries the code its description names, when that code has the status", () => {
    expect(
      problemExample(409, 'Decided already (`approval_already_decided`) or past expiry (`approval_expired`).', '/api/v1/approvals/{id}/approve'),
    ).toMatchObject({
      status: 409,
      code: 'approval_already_decided',
      type: 'urn:capability-platform:problem:approval_already_decided',
      detail: 'Decided already (`approval_already_decided`) or past expiry (`approval_expired`).',
    });
    // `invalid_arguments` is a 422: for a 409 the generic code of the status is used instead.
    expect(problemExample(409, 'Taken (`invalid_arguments`).', '/x').code).toBe('conflict');
    expect(problemExample(404, undefined, '/api/v1/agents/{agentId}').instance).toMatch(/^\/api\/v1\/agents\/[0-9a-f-]{36}$/);
  });

  it('keeps declared examples, follows references, and lists only required or exemplified fields', () => {
    const build = new ExampleBuilder({
      Item: {
        type: 'object',
        required: ['id', 'count'],
        properties: { id: { type: 'string', format: 'uuid' }, count: { type: 'integer', minimum: 3 }, note: { type: 'string' } },
      },
    });
    const page = build.of({
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Item' } }, label: { type: 'string', example: 'first page' } },
    }) as { items: { id: string; count: number; note?: string }[]; label: string };
    expect(page.label).toBe('first page');
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), count: 3 });
    expect(build.of({ type: 'string', enum: ['pending', 'approved'] })).toBe('pending');
  });
});
