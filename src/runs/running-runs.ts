import { ApiError } from '../common/api-error';
import type { RunsRepository } from './runs.repository';

/** An organization's runs `running` at once when RUN_MAX_RUNNING_PER_ORG is unset. */
export const DEFAULT_MAX_RUNNING_PER_ORG = 1000;

/** RUN_MAX_RUNNING_PER_ORG, its default when unset. */
export function maxRunningOf(configured: number | undefined): number {
  return configured ?? DEFAULT_MAX_RUNNING_PER_ORG;
}

/**
 * 429 when the organization has `max` runs `running` (RUN_MAX_RUNNING_PER_ORG): each one waiting
 * for a slot is ranked by every node's poll, and one organization's 100,000 queued behind a
 * provider that never answered made each poll 0.7 s (attack round 13, K-F4). A refusal before the
 * run's write waits for no turn; the write counts again under the organization's lock
 * (RunsRepository.insert), so runs started at the same moment do not pass it.
 */
export async function assertRoomToRun(repo: Pick<RunsRepository, 'countRunning'>, configured: number | undefined, orgId: string): Promise<void> {
  const max = maxRunningOf(configured);
  if ((await repo.countRunning(orgId, max)) >= max) throw tooManyRunning(max);
}

/** The refusal of a run past the organization's runs `running` (RUN_MAX_RUNNING_PER_ORG); nothing started. */
export function tooManyRunning(max: number): ApiError {
  return new ApiError(
    'rate_limited',
    `This organization has ${max} runs running, the most it may (RUN_MAX_RUNNING_PER_ORG); start this one when some have finished. Nothing was started.`,
    undefined,
    undefined,
    { 'Retry-After': '5' },
  );
}
