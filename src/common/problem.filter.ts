import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ErrorCode, FieldError, titleFor } from './api-error';
import { isDatabaseUnavailable } from './db-errors';

/** What a client is told to wait before trying again while the database does not answer. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance?: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  408: 'request_timeout',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
  503: 'service_unavailable',
};

export function problemType(code: ErrorCode): string {
  return `urn:capability-platform:problem:${code}`;
}

export function toProblem(error: unknown): { problem: ProblemDocument; headers: Record<string, string>; internal: boolean } {
  if (error instanceof ApiError) {
    const problem: ProblemDocument = {
      ...(error.extensions ?? {}),
      type: problemType(error.code),
      title: titleFor(error.status),
      status: error.status,
      detail: error.detail,
      code: error.code,
    };
    if (error.errors) problem.errors = error.errors;
    return { problem, headers: error.headers ?? {}, internal: false };
  }
  if (error instanceof ThrottlerException) {
    return { problem: simple(429, 'rate_limited', 'Too many requests; retry after the time in Retry-After.'), headers: {}, internal: false };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const code = CODE_BY_STATUS[status];
    if (code && status < 500) {
      const detail = status === 404 ? 'No such resource.' : (messageOf(error.getResponse()) ?? titleFor(status));
      return { problem: simple(status, code, detail), headers: {}, internal: false };
    }
  }
  // Errors raised by Fastify itself (body parsing, size limits, content types) carry a statusCode.
  const fastifyStatus = (error as { statusCode?: unknown })?.statusCode;
  if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
    const code = CODE_BY_STATUS[fastifyStatus] ?? 'invalid_request';
    const detail =
      fastifyStatus === 413
        ? 'The request body is larger than 1 MiB.'
        : fastifyStatus === 431
          ? 'The request line or headers are too large.'
          : fastifyStatus === 400
            ? /nests deeper|not valid JSON/.test(String((error as Error).message))
              ? String((error as Error).message)
              : 'The request is malformed.'
            : String((error as Error).message ?? titleFor(fastifyStatus));
    return { problem: simple(fastifyStatus, code, detail), headers: {}, internal: false };
  }
  if (isDatabaseUnavailable(error)) {
    // Logged (internal) all the same: an operator wants to know; the client may simply retry.
    return {
      problem: simple(503, 'service_unavailable', 'The database does not answer; try again shortly.'),
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_SECONDS) },
      internal: true,
    };
  }
  return { problem: simple(500, 'internal_error', 'An unexpected error occurred. It has been logged.'), headers: {}, internal: true };
}

function simple(status: number, code: ErrorCode, detail: string): ProblemDocument {
  return { type: problemType(code), title: titleFor(status), status, detail, code };
}

function messageOf(response: unknown): string | undefined {
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown })?.message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.join('; ');
  return undefined;
}

export function sendProblem(reply: FastifyReply, request: FastifyRequest | undefined, error: unknown, logger: Logger): void {
  const { problem, headers, internal } = toProblem(error);
  if (internal) {
    logger.error({ err: error, reqId: request?.id }, 'unhandled error');
  }
  if (request?.url) problem.instance = request.url.split('?')[0];
  if (reply.sent) return;
  void reply.status(problem.status).headers(headers).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
}

/** The one place where every error becomes a problem document. Internals never reach the body. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    sendProblem(http.getResponse<FastifyReply>(), http.getRequest<FastifyRequest>(), exception, this.logger);
  }
}
