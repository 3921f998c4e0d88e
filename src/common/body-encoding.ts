import { isUtf8 } from 'node:buffer';
import { ApiError, cutText } from './api-error';

/** Labels of UTF-8 (WHATWG Encoding): JSON is UTF-8 (RFC 8259 §8.1), and these say so. */
const UTF8_LABELS = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8']);

/** The `charset` parameter of a Content-Type, lowercased and unquoted; undefined without one. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2]).toLowerCase() : undefined;
}

/**
 * A JSON body as text, or the refusal. A body in another charset was decoded as UTF-8 anyway, and
 * bytes that are not UTF-8 became U+FFFD: the approver saw, and the tool got, text the client never
 * sent. Both are refused instead (415, 400); the check is one native pass over the bytes.
 */
export function jsonBodyText(contentType: string | undefined, body: Buffer): string | ApiError {
  if (body.length === 0) return '';
  const charset = charsetOf(contentType);
  if (charset !== undefined && !UTF8_LABELS.has(charset)) {
    return new ApiError('unsupported_media_type', 'A JSON body is UTF-8; send it as such, with charset=utf-8 or no charset.', [
      { path: 'Content-Type', code: 'unsupported_charset', message: `charset ${cutText(charset, 40)} is not supported; JSON is UTF-8` },
    ]);
  }
  if (!isUtf8(body)) {
    return ApiError.invalidRequest(
      [{ path: '', code: 'invalid_utf8', message: 'the body holds bytes that are not UTF-8' }],
      'The request body is not valid UTF-8.',
    );
  }
  return body.toString('utf8');
}

/** Whether the request has a body to read: chunked, or a Content-Length other than 0. */
export function declaresBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** Whether a Content-Encoding names no coding but identity (RFC 9110 §8.4: a list, applied in order). */
function isIdentity(contentEncoding: string): boolean {
  return contentEncoding.split(',').every((c) => {
    const coding = c.trim().toLowerCase();
    return coding === '' || coding === 'identity';
  });
}

/**
 * A body with a content coding we do not decode (RFC 9110 §15.5.16), or undefined. Unchecked, a
 * gzip body was "not valid JSON", and a plain body labelled gzip ran: what was processed was not
 * what the request declared. Only a request with a body is refused.
 */
export function unsupportedContentEncoding(headers: Record<string, string | string[] | undefined>): ApiError | undefined {
  const coding = headers['content-encoding'];
  if (typeof coding !== 'string' || isIdentity(coding)) return undefined;
  if (!declaresBody(headers)) return undefined;
  return new ApiError(
    'unsupported_media_type',
    'The request body has a content coding this server does not decode; send it uncompressed.',
    [{ path: 'Content-Encoding', code: 'unsupported_encoding', message: `Content-Encoding ${cutText(coding, 40)} is not supported; only identity is` }],
    undefined,
    { 'Accept-Encoding': 'identity' },
  );
}
