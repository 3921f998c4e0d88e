import type { RateLimitStatus } from './rate-limiter.service';

/**
 * Requests with a body are counted against the rate limits before their body is read
 * (src/auth/anonymous-requests.ts): counted in the guard, which runs once the body is parsed, a
 * body that failed to parse was answered `400` and never counted, so a key went on past its limit
 * with a megabyte read and parsed a request (attack round 20, AB-F4). The guard does not count
 * these again; it sends where they stood.
 */
const counted = new WeakMap<object, RateLimitStatus | null>();

export function countedBeforeBody(request: object, status: RateLimitStatus | undefined): void {
  counted.set(request, status ?? null);
}

/** Undefined: not counted yet (the guard counts it); else where it stood when counted (`limits` undefined when every limit is off). */
export function countBeforeBody(request: object): { limits?: RateLimitStatus } | undefined {
  if (!counted.has(request)) return undefined;
  const limits = counted.get(request);
  return limits ? { limits } : {};
}
