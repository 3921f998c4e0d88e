import type { AuditEventType } from '../audit/audit.service';
import { effectiveRoles, Principal } from '../auth/principal';
import { ApiError, FieldError } from '../common/api-error';

/**
 * What an approver's `GET /events` carries: the work it reviews and what it needs to judge it
 * (agents and their versions, tool calls, approvals, runs, tools switched off), all of which its
 * role reads through the API anyway. The rest is the organization's configuration, the audit log
 * an admin reads: key inventories, scopes, and where the organization's traffic goes (MCP servers,
 * model providers, webhook receivers, whose URLs name and may authenticate those places). Opening
 * the stream to approvers once handed them all of it, `Last-Event-ID: 0-0` from the beginning.
 */
export const APPROVER_EVENT_TYPES: readonly AuditEventType[] = [
  'agent.created',
  'agent.published',
  'agent.version_retired',
  'tool_call.requested',
  'tool_call.denied',
  'tool_call.succeeded',
  'tool_call.failed',
  'approval.requested',
  'approval.approved',
  'approval.rejected',
  'approval.expired',
  'tool.disabled',
  'tool.enabled',
  'run.started',
  'run.succeeded',
  'run.failed',
  'run.cancelled',
];

const APPROVER_SET: ReadonlySet<string> = new Set(APPROVER_EVENT_TYPES);

/**
 * The types a stream of `principal` reads: `undefined` (every one) for an admin, otherwise the
 * approver's types, narrowed to those asked. Asking for a type the role may not read is refused
 * (403 naming it), not answered with a stream that silently never carries it.
 */
export function streamTypesFor(principal: Principal, asked: readonly string[] | undefined): readonly string[] | undefined {
  if (principal.type === 'platform' || effectiveRoles(principal.roles).has('admin')) return asked;
  if (!asked) return APPROVER_EVENT_TYPES;
  const refused: FieldError[] = [];
  asked.forEach((type, i) => {
    if (!APPROVER_SET.has(type)) {
      refused.push({ path: `types[${i}]`, code: 'type_not_permitted', message: `${type} is in the audit log, which only an admin reads` });
    }
  });
  if (refused.length > 0) {
    throw new ApiError('forbidden', `An approver's event stream carries only these types: ${APPROVER_EVENT_TYPES.join(', ')}.`, refused);
  }
  return asked;
}
