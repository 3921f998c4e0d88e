import type { RunsConfig } from '../../src/config/runs-config';

/**
 * Runs as the run suites step them: quickly (a poll every 100 ms, short back-off and timeouts), on
 * a node one organization has to itself (8 slots, all of them its own, none reserved). A suite
 * about sharing a node or about failures says what it changes.
 */
export function testRunsConfig(overrides: Partial<RunsConfig> = {}): RunsConfig {
  return {
    maxSteps: 6,
    leaseMs: 30_000,
    pollIntervalMs: 100,
    maxConcurrent: 8,
    maxConcurrentPerOrg: 8,
    reservedForNewOrgs: 0,
    modelRetries: 2,
    modelRetryBaseMs: 10,
    modelTimeoutMs: 5000,
    ...overrides,
  };
}
