/** Postgres SQLSTATE for unique_violation: the database, not a prior read, decides who won. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; driverError?: { code?: string; constraint?: string }; constraint?: string };
  const code = e?.code ?? e?.driverError?.code;
  if (code !== '23505') return false;
  return constraint === undefined || (e.constraint ?? e.driverError?.constraint) === constraint;
}

/** Postgres SQLSTATE for foreign_key_violation: e.g. deleting a row that something still binds. */
export function isForeignKeyViolation(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string } };
  return (e?.code ?? e?.driverError?.code) === '23503';
}

/**
 * Postgres SQLSTATE for program_limit_exceeded: a value within our own limits that a PostgreSQL
 * structure still cannot hold (a tsvector over 1 MiB).
 */
export function isProgramLimitExceeded(err: unknown): boolean {
  const e = err as { code?: string; driverError?: { code?: string } };
  return (e?.code ?? e?.driverError?.code) === '54000';
}

/** Socket errors of a connection that cannot be made or was lost. */
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
/**
 * SQLSTATEs of a server that is going away or cannot take us now (class 08, 57P01-03,
 * too_many_connections), or that is up but refuses this client its connection: the database is
 * gone by that name (3D000: dropped, renamed, a failover to a server without it) or the
 * credentials are (class 28: a password rotated before the configuration), or it has become a
 * read-only standby (25006, a failover that left the nodes on the old primary). An operator fixes
 * those; the request was no worse for it.
 */
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300|3D000|28[0-9A-Z]{3}|25006)$/;
/** What node-postgres and its pool say when the connection is gone or none can be had. */
const CONNECTION_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection refused/i;

/**
 * The database could not be reached (refused, lost, pool timed out, shutting down): no fault of the
 * request, so it is answered 503 and may be retried, not 500 (a bug of ours).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && (CONNECTION_ERRNOS.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
    if (typeof e.message === 'string' && CONNECTION_MESSAGE.test(e.message)) return true;
    // AggregateError (a host with several addresses, all refused) holds the socket errors in `errors`.
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner) && inner.some((x) => isDatabaseUnavailable(x))) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
