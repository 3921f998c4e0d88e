import { ApiError } from '../common/api-error';
import { isForeignKeyViolation } from '../common/db-errors';

/** A published agent version that binds a resource. */
export interface BoundVersion {
  agent_id: string;
  version: number;
}

export function resourceInUse(what: string, bound: readonly BoundVersion[]): ApiError {
  return new ApiError(
    'resource_in_use',
    `The ${what} is bound by a published agent version and cannot be deleted.`,
    undefined,
    bound.length > 0 ? { boundBy: bound.map((b) => ({ agentId: b.agent_id, version: b.version })) } : undefined,
  );
}

/**
 * The one way a resource that published versions may bind (a knowledge collection, a skill, an
 * MCP connection) is deleted, inside the caller's transaction: row lock first, so a publish that
 * binds it either committed before (and is seen by `boundBy`) or waits and then finds it gone;
 * refused while a version binds it, because that version must keep working; and the foreign key
 * as the last word if anything slipped past the check. Returns the locked row.
 */
export async function deleteUnlessBound<T>(
  what: string,
  steps: { lock(): Promise<T | undefined>; boundBy(): Promise<BoundVersion[]>; remove(): Promise<void> },
): Promise<T> {
  const row = await steps.lock();
  if (row === undefined) throw ApiError.notFound(what);
  const bound = await steps.boundBy();
  if (bound.length > 0) throw resourceInUse(what, bound);
  try {
    await steps.remove();
  } catch (err) {
    if (isForeignKeyViolation(err)) throw resourceInUse(what, []);
    throw err;
  }
  return row;
}
