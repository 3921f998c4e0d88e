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
