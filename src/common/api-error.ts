/**
 * Domain errors carry a stable `code` that clients branch on. The exception filter is the only
 * place that turns them (and everything else) into RFC 9457 problem documents.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'insufficient_scope'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'request_timeout'
  | 'unsupported_media_type'
  | 'method_not_allowed'
  | 'rate_limited'
  | 'internal_error'
  | 'service_unavailable'
  | 'spec_invalid'
  | 'resource_in_use'
  | 'unknown_tool'
  | 'not_published'
  | 'tool_definition_changed'
  | 'invalid_arguments'
  | 'scope_not_granted'
  | 'budget_exceeded'
  | 'idempotency_key_reused'
  | 'idempotency_in_progress'
  | 'approval_already_decided'
  | 'approval_expired'
  | 'self_approval_forbidden'
  | 'approval_arguments_changed'
  | 'result_not_available'
  | 'egress_refused'
  | 'mcp_connect_failed'
  | 'uri_too_long'
  | 'expectation_failed'
  | 'document_not_indexable'
  | 'version_retired'
  | 'tool_disabled'
  | 'origin_not_allowed'
  | 'model_not_configured';

/**
 * The HTTP status of every error code: the one place a code becomes a status. Domain code throws
 * by code; the problem filter and MCP read the code (and, for HTTP, this table).
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  headers_too_large: 431,
  request_timeout: 408,
  unsupported_media_type: 415,
  method_not_allowed: 405,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
  spec_invalid: 422,
  resource_in_use: 409,
  unknown_tool: 404,
  not_published: 409,
  tool_definition_changed: 409,
  invalid_arguments: 422,
  scope_not_granted: 403,
  budget_exceeded: 429,
  idempotency_key_reused: 422,
  idempotency_in_progress: 409,
  approval_already_decided: 409,
  approval_expired: 409,
  self_approval_forbidden: 403,
  approval_arguments_changed: 409,
  result_not_available: 404,
  egress_refused: 422,
  mcp_connect_failed: 422,
  uri_too_long: 414,
  expectation_failed: 417,
  document_not_indexable: 422,
  version_retired: 409,
  tool_disabled: 403,
  origin_not_allowed: 403,
  model_not_configured: 409,
} as const satisfies Record<ErrorCode, number>;

export interface FieldError {
  path: string;
  code?: string;
  message: string;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  417: 'Expectation Failed',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function titleFor(status: number): string {
  return TITLES[status] ?? 'Error';
}

/**
 * The most `errors[]` entries an answer (and the audit event that records a refusal) carries. A
 * body of a megabyte can hold a hundred thousand mistakes; listing each would make the answer and
 * the append-only audit log grow with the attacker's input, not with anything a person reads.
 */
export const MAX_REPORTED_ERRORS = 50;

/** The first MAX_REPORTED_ERRORS entries, and how many were left out. */
export function boundErrors<T>(errors: readonly T[], omittedBefore = 0): { errors: T[]; omitted: number } {
  if (errors.length <= MAX_REPORTED_ERRORS) return { errors: [...errors], omitted: omittedBefore };
  return { errors: errors.slice(0, MAX_REPORTED_ERRORS), omitted: omittedBefore + errors.length - MAX_REPORTED_ERRORS };
}

/** Lengths past which a refusal's texts are cut: each may quote the request (a tool's name, a key), and is answered and audited. */
export const MAX_DETAIL_CHARS = 1000;
export const MAX_ERROR_PATH_CHARS = 300;
export const MAX_ERROR_MESSAGE_CHARS = 500;

/** `text` cut to `max` characters with an ellipsis, never splitting a surrogate pair (what is cut is stored). */
export function cutText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).toWellFormed()}…`;
}

export class ApiError extends Error {
  /** From ERROR_STATUS: a code always answers with the same status. */
  readonly status: number;
  readonly errors?: FieldError[];
  /** Extra members of the problem document (RFC 9457 extensions), e.g. the approval id. */
  readonly extensions?: Record<string, unknown>;

  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    errors?: FieldError[],
    extensions?: Record<string, unknown>,
    /** Response headers that belong to the refusal, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    detail = cutText(detail, MAX_DETAIL_CHARS);
    super(detail);
    this.detail = detail;
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
    if (errors) {
      // Bounded here, once, so that no refusal anywhere can answer (or audit) an unbounded list,
      // nor entries as long as the request (a 900,000-character key named in a path and a message).
      const { errorsOmitted, ...rest } = extensions ?? {};
      const bounded = boundErrors(errors, typeof errorsOmitted === 'number' ? errorsOmitted : 0);
      this.errors = bounded.errors.map((e) =>
        e.path.length <= MAX_ERROR_PATH_CHARS && e.message.length <= MAX_ERROR_MESSAGE_CHARS
          ? e
          : { ...e, path: cutText(e.path, MAX_ERROR_PATH_CHARS), message: cutText(e.message, MAX_ERROR_MESSAGE_CHARS) },
      );
      extensions = bounded.omitted > 0 ? { ...rest, errorsOmitted: bounded.omitted } : extensions && rest;
    }
    this.extensions = extensions;
  }

  static invalidRequest(errors: FieldError[], detail = 'The request is invalid.'): ApiError {
    return new ApiError('invalid_request', detail, errors);
  }
  /** RFC 9110 15.5.2: a 401 names the scheme that would work. */
  static unauthorized(detail = 'A valid bearer token is required.'): ApiError {
    return new ApiError('unauthorized', detail, undefined, undefined, { 'WWW-Authenticate': 'Bearer' });
  }
  static forbidden(detail = 'Your role does not allow this action.'): ApiError {
    return new ApiError('forbidden', detail);
  }
  /** Missing and "belongs to another organization" are deliberately the same answer. */
  static notFound(what = 'resource'): ApiError {
    return new ApiError('not_found', `No such ${what}.`);
  }
  /** `code` must be one whose status is 409. */
  static conflict(detail: string, code: ErrorCode = 'conflict'): ApiError {
    return new ApiError(code, detail);
  }
}
