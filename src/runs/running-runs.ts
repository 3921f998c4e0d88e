import { ApiError } from '../common/api-error';
import type { RunsRepository } from './runs.repository';

/** An organization's runs `running` at once when RUN_MAX_RUNNING_PER_ORG is unset. */
export const DEFAULT_MAX_RUNNING_PER_ORG = 1000;

/**
 * 429 when the organization has `max` runs `running` (RUN_MAX_RUNNING_PER_ORG): each one waiting
 * for a slot is ranked by every node's poll, and one organization's 100,000 queued behind a
 * provider that never answered made each poll 0.7 s (attack round 13, K-F4). Runs started at the
 * same moment may pass it by a few; what it bounds is a queue growing for hours.
 */
export async function assertRoomToRun(repo: Pick<RunsRepository, 'countRunning'>, configured: number | undefined, orgId: string): Promise<void> {
  const max = configured ?? DEFAULT_MAX_RUNNING_PER_ORG;
  if ((await repo.countRunning(orgId, max)) < max) return;
  throw new ApiError(
    'rate_limited',
    `This organization has ${max} runs running, the most it may (RUN_MAX_RUNNING_PER_ORG); start this one when some have finished. Nothing was started.`,
    undefined,
    undefined,
    { 'Retry-After': '5' },
  );
}
