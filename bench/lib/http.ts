/** A small JSON client for setting up scenarios through the product's own API. */
export interface JsonResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  as(token: string): Api {
    return new Api(this.baseUrl, token);
  }

  get<T = any>(path: string): Promise<JsonResponse<T>> {
    return this.send<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
    return this.send<T>('POST', path, body, headers);
  }

  put<T = any>(path: string, body?: unknown): Promise<JsonResponse<T>> {
    return this.send<T>('PUT', path, body);
  }

  async send<T>(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<JsonResponse<T>> {
    const headers: Record<string, string> = { ...extra };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }
}

/** Throws with the answer when the status is not the expected one: a scenario must measure what it claims to. */
export function expectStatus<T>(res: JsonResponse<T>, status: number | number[], what: string): JsonResponse<T> {
  const ok = Array.isArray(status) ? status.includes(res.status) : res.status === status;
  if (!ok) throw new UnexpectedAnswer(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`, res.status);
  return res;
}

export class UnexpectedAnswer extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}
