import { runStandalone } from '../lib/standalone';
import { getWithBuilderKey, type ThroughputScenario } from '../lib/throughput';

export const catalog: ThroughputScenario = {
  id: 'catalog',
  name: 'GET /agents/capabilities',
  description:
    'The capability catalog read with an organization key (builder): authentication (one key lookup), the catalog computed at boot, `available` per capability for the organization, and its ETag.',
  prepare: getWithBuilderKey('/api/v1/agents/capabilities'),
};

if (require.main === module) void runStandalone('catalog', [catalog]);
