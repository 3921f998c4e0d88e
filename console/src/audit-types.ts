import type { paths } from './api/schema';

export type EventType = NonNullable<NonNullable<paths['/api/v1/audit-events']['get']['parameters']['query']>['type']>;

// Every audit event type the API documents, for the audit log's filter and webhook subscriptions:
// a Record over the generated union, so a type added on the server is a compile error here until
// it is listed.
const TYPE_SET: Record<EventType, true> = {
  'org.created': true,
  'org.scopes_updated': true,
  'org.api_key_policy_updated': true,
  'api_key.created': true,
  'api_key.revoked': true,
  'api_key.expiring': true,
  'api_key.expired': true,
  'agent.created': true,
  'agent.published': true,
  'agent.version_retired': true,
  'tool.disabled': true,
  'tool.enabled': true,
  'tool_call.requested': true,
  'tool_call.denied': true,
  'tool_call.succeeded': true,
  'tool_call.failed': true,
  'approval.requested': true,
  'approval.approved': true,
  'approval.rejected': true,
  'approval.expired': true,
  'webhook.created': true,
  'webhook.secret_rotated': true,
  'webhook.deleted': true,
  'webhook.backlogged': true,
  'webhook.backlog_cleared': true,
  'mcp_connection.created': true,
  'mcp_connection.synced': true,
  'mcp_connection.risk_set': true,
  'mcp_connection.credentials_updated': true,
  'mcp_connection.url_updated': true,
  'mcp_connection.deleted': true,
  'run.started': true,
  'run.succeeded': true,
  'run.failed': true,
  'run.cancelled': true,
  'model_provider.created': true,
  'model_provider.api_key_updated': true,
  'model_provider.deleted': true,
};
export const AUDIT_EVENT_TYPES = Object.keys(TYPE_SET) as EventType[];
