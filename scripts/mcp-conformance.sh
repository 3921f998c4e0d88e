#!/usr/bin/env bash
# The official MCP conformance suite against an agent's MCP endpoint (see scripts/mcp-conformance.ts;
# the scenarios that do not apply are in test/mcp-conformance-baseline.yml, with the reason).
set -euo pipefail
cd "$(dirname "$0")/.."
exec node -r @swc-node/register scripts/mcp-conformance.ts "$@"
