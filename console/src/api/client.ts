import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
export type Problem = Schemas['Problem'];
export type FieldError = NonNullable<Problem['errors']>[number];

/** A refusal from the API, carrying its problem document (RFC 9457) so a page can show `errors[]` by field. */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(problem.detail || problem.title);
  }
}

function asProblem(body: unknown, response: Response): Problem {
  if (body && typeof body === 'object' && 'code' in body && 'status' in body) return body as Problem;
  return {
    type: 'about:blank',
    title: response.statusText || 'Error',
    status: response.status,
    detail: `The server answered ${response.status}.`,
    code: 'unexpected_response',
  };
}

/**
 * The typed client for the public API, bound to one API key. The key lives only in this closure
 * and in the session's React state: never in a URL, a cookie or Web Storage, so closing the tab
 * (or reloading) forgets it.
 */
export function createApi(token: string, onUnauthorized: () => void) {
  const client = createClient<paths>({ baseUrl: window.location.origin });
  client.use({
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${token}`);
      return request;
    },
    onResponse({ response }) {
      // A key revoked while the console is open: sign out instead of failing page by page.
      if (response.status === 401) onUnauthorized();
      return response;
    },
  });
  return client;
}

export type Api = ReturnType<typeof createApi>;

/** Awaits an openapi-fetch call and answers its data, or throws a ProblemError for any refusal. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ProblemError(response.status, asProblem(error, response));
  return data as T;
}

/** What a person reads for an error of any kind. */
export function messageOf(err: unknown): string {
  if (err instanceof ProblemError) return err.problem.detail || err.problem.title;
  if (err instanceof Error) return err.message;
  return String(err);
}
