import { ValidateBy } from 'class-validator';

/**
 * A URL ioredis will read: the WHATWG parser takes it (a port past 65535 or a host it refuses
 * fails there). Checked with the others at start, so such a value is refused naming its variable
 * without showing it: `RATE_LIMIT_REDIS_URL=redis://:<password>@host:notaport` passed the pattern
 * check and made ioredis throw at start, and the stack trace printed the whole URL, password and
 * all, as text rather than the one JSON line (attack round 22, AH-F2).
 */
export function ParsesAsUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'parsesAsUrl',
    validator: {
      validate: (v: unknown) => typeof v === 'string' && URL.canParse(v),
      defaultMessage: () => 'is not a URL that can be parsed (its port, host or characters)',
    },
  });
}
