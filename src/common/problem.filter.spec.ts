import { BadRequestException, HttpException, NotFoundException } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import { ApiError } from './api-error';
import { toProblem } from './problem.filter';

describe('problem documents', () => {
  it('renders an ApiError with its code, field errors and extensions', () => {
    const { problem, headers, internal } = toProblem(
      new ApiError('approval_expired', 'Too late.', [{ path: 'x', message: 'm' }], { approvalId: 'a' }, { 'Retry-After': '3' }),
    );
    expect(problem).toEqual({
      type: 'urn:capability-platform:problem:approval_expired',
      title: 'Conflict',
      status: 409,
      detail: 'Too late.',
      code: 'approval_expired',
      errors: [{ path: 'x', message: 'm' }],
      approvalId: 'a',
    });
    expect(headers).toEqual({ 'Retry-After': '3' });
    expect(internal).toBe(false);
  });

  it('a database that cannot be reached is 503 service_unavailable with Retry-After, not 500; other errors stay 500', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const unavailable = [
      refused,
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('query failed'), {
        driverError: Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      }),
      Object.assign(new Error('x'), { code: '08006' }),
      // A server that is up but refuses the connection: the database gone by its name, a rotated password.
      Object.assign(new Error('database "gateway" does not exist'), { code: '3D000' }),
      Object.assign(new Error('password authentication failed for user "gateway"'), { code: '28P01' }),
      Object.assign(new Error('query failed'), { driverError: Object.assign(new Error('no pg_hba.conf entry for host'), { code: '28000' }) }),
      // A failover that left the nodes on a standby: every write refused.
      Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
      new AggregateError([refused], ''),
    ];
    for (const err of unavailable) {
      const { problem, headers } = toProblem(err);
      expect([problem.status, problem.code, headers['Retry-After']]).toEqual([503, 'service_unavailable', '5']);
    }
    for (const err of [new Error('boom'), Object.assign(new Error('dup'), { code: '23505' }), new TypeError('x is undefined')]) {
      expect(toProblem(err).problem).toMatchObject({ status: 500, code: 'internal_error' });
    }
  });

  it('maps framework exceptions to stable codes', () => {
    expect(toProblem(new NotFoundException('Cannot GET /x')).problem).toMatchObject({ status: 404, code: 'not_found', detail: 'No such resource.' });
    expect(toProblem(new BadRequestException('nope')).problem).toMatchObject({ status: 400, code: 'invalid_request', detail: 'nope' });
    expect(toProblem(new BadRequestException(['a', 'b'])).problem).toMatchObject({ detail: 'a; b' });
    expect(toProblem(new ThrottlerException()).problem).toMatchObject({ status: 429, code: 'rate_limited' });
  });

  it('maps errors raised by the HTTP server itself', () => {
    expect(toProblem(Object.assign(new Error('big'), { statusCode: 413 })).problem).toMatchObject({ status: 413, code: 'payload_too_large' });
    expect(toProblem(Object.assign(new Error('json'), { statusCode: 400 })).problem).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(toProblem(Object.assign(new Error('Unsupported Media Type: text/plain'), { statusCode: 415 })).problem).toMatchObject({
      status: 415,
      code: 'unsupported_media_type',
    });
  });

  it('hides everything about an unexpected error', () => {
    const secret = new Error('password=hunter2 at db.ts:12');
    const { problem, internal } = toProblem(secret);
    expect(internal).toBe(true);
    expect(problem).toMatchObject({ status: 500, code: 'internal_error' });
    expect(JSON.stringify(problem)).not.toContain('hunter2');
    expect(toProblem(new HttpException('boom', 502)).internal).toBe(true);
  });
});
