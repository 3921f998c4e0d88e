import { useMemo, useState } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { PrincipalName, usePrincipalNames } from '../components/actor';
import { Alert, formatTime, JsonView, ShowMore, Status, useLoad, usePages, visibleJson, visibleText } from '../components/feedback';
import { useLiveUpdates } from '../events';
import { PageTitle } from '../router';
import { can, useSession } from '../session';

type Approval = Schemas['ApprovalView'];

const REASONS: Record<Approval['reason'], string> = {
  side_effecting: 'the tool has side effects',
  interrupt_before: 'the tool asks for a person before it runs',
  spec_required: "the agent's spec requires approval for it",
};

const PAGE_SIZE = 200;

const DECIDED = ['approved', 'rejected', 'expired'] as const;

const APPROVAL_EVENTS = ['approval.requested', 'approval.approved', 'approval.rejected', 'approval.expired'];

export function ApprovalsPage() {
  const { api, token } = useSession();
  // Newest first, a page at a time: requests past the first page must be reachable, or 200 newer
  // ones (any agent key can ask) would hide an older request from every approver.
  const pending = usePages(
    (cursor) => ok(api.GET('/api/v1/approvals', { params: { query: { status: 'pending', limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })),
    [api],
  );
  // Each decided status on its own: one page of every status (newest requests first) was all
  // pending once 50 newer requests waited, which any agent key can ask, and said "No decisions yet."
  const recent = useLoad(async () => {
    const pages = await Promise.all(DECIDED.map((status) => ok(api.GET('/api/v1/approvals', { params: { query: { status, limit: 50 } } }))));
    const when = (a: Approval) => a.decidedAt ?? a.expiresAt;
    return pages
      .flatMap((p) => p.items)
      .sort((a, b) => when(b).localeCompare(when(a)))
      .slice(0, 50);
  }, [api]);
  const agents = useLoad(() => ok(api.GET('/api/v1/agents', { params: { query: { limit: 200 } } })), [api]);
  const catalog = useLoad(() => ok(api.GET('/api/v1/agents/capabilities')), [api]);
  const [status, setStatus] = useState<string>();
  const refresh = () => {
    pending.reload();
    recent.reload();
    // A request may come from an agent created since the page loaded: its name is needed too.
    agents.reload();
  };
  const mode = useLiveUpdates(token, APPROVAL_EVENTS, refresh);
  // By name and slug: names are free text and may repeat, the slug is the agent's own.
  const agentName = useMemo(() => new Map((agents.data?.items ?? []).map((a) => [a.id, `${visibleText(a.name)} (${a.slug})`])), [agents.data]);
  const riskOf = useMemo(() => {
    const map = new Map<string, string>();
    for (const c of catalog.data?.items ?? []) for (const t of c.tools) map.set(`${c.id}/${t.id}`, t.risk);
    return map;
  }, [catalog.data]);
  const decided = recent.data ?? [];
  const items = pending.data?.items ?? [];
  const more = Boolean(pending.data?.nextCursor);
  const names = usePrincipalNames([...items.map((a) => a.requestedBy), ...decided.map((a) => a.decidedBy)]);

  return (
    <>
      <PageTitle>Approvals</PageTitle>
      <p className="muted live">
        {mode === 'live' ? 'Live: new requests appear as they are made.' : mode === 'polling' ? 'Checking for new requests every few seconds.' : 'Connecting…'}
      </p>
      <Status>{status}</Status>
      <Alert>{pending.error}</Alert>
      <section aria-labelledby="pending-title">
        <h2 id="pending-title">{more ? `Pending (${items.length} shown, more waiting)` : `Pending (${items.length})`}</h2>
        {pending.data && items.length === 0 && <p className="muted">Nothing waits for a decision.</p>}
        <ul className="approvals" aria-labelledby="pending-title">
          {items.map((a) => (
            <PendingApproval
              key={a.id}
              approval={a}
              names={names}
              agentName={agentName.get(a.agentId) ?? a.agentId}
              risk={riskOf.get(`${a.capabilityId}/${a.toolId}`)}
              onDecided={(message) => {
                setStatus(message);
                refresh();
              }}
            />
          ))}
        </ul>
        <ShowMore list={pending}>Show older requests</ShowMore>
      </section>
      <section aria-labelledby="decided-title">
        <h2 id="decided-title">Decided</h2>
        {recent.data && decided.length === 0 && <p className="muted">No decisions yet.</p>}
        {decided.length > 0 && (
          <table>
            <caption className="visually-hidden">Recently decided approvals</caption>
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Agent</th>
                <th scope="col">Decision</th>
                <th scope="col">Decided by</th>
                <th scope="col">When</th>
                <th scope="col">Note</th>
              </tr>
            </thead>
            <tbody>
              {decided.map((a) => (
                <tr key={a.id}>
                  <td>
                    <code>{visibleText(a.tool)}</code>
                  </td>
                  <td>{agentName.get(a.agentId) ?? a.agentId}</td>
                  <td>
                    {a.status}
                    {a.approvedArgumentsHash ? ' (edited arguments)' : ''}
                  </td>
                  <td>{a.decidedBy ? <PrincipalName id={a.decidedBy} names={names} /> : '—'}</td>
                  <td>{formatTime(a.decidedAt ?? a.expiresAt)}</td>
                  <td>{a.note}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

function PendingApproval({
  approval: a,
  names,
  agentName,
  risk,
  onDecided,
}: {
  approval: Approval;
  names: ReadonlyMap<string, Schemas['PrincipalView']>;
  agentName: string;
  risk?: string;
  onDecided(message: string): void;
}) {
  const { api, me } = useSession();
  const mayDecide = can(me, 'approve');
  const [mode, setMode] = useState<'idle' | 'edit' | 'reject'>('idle');
  const [args, setArgs] = useState(() => visibleJson(a.arguments));
  const [argErrors, setArgErrors] = useState<string[]>([]);
  const [reason, setReason] = useState('');
  const [reasonError, setReasonError] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const titleId = `approval-${a.id}`;
  const argsId = `approval-${a.id}-args`;

  const approve = async () => {
    setError(undefined);
    setArgErrors([]);
    let edited: Record<string, unknown> | undefined;
    if (mode === 'edit') {
      try {
        const parsed: unknown = JSON.parse(args);
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('The arguments must be a JSON object.');
        edited = parsed as Record<string, unknown>;
      } catch (err) {
        setArgErrors([err instanceof SyntaxError ? `Not valid JSON: ${err.message}` : messageOf(err)]);
        return;
      }
    }
    setBusy(true);
    try {
      const result = await ok(api.POST('/api/v1/approvals/{id}/approve', { params: { path: { id: a.id } }, body: edited ? { arguments: edited } : {} }));
      onDecided(`Approved ${a.tool}: the call ${result.toolCall.status}.`);
    } catch (err) {
      if (err instanceof ProblemError && err.problem.code === 'invalid_arguments') {
        setMode('edit');
        setArgErrors((err.problem.errors ?? []).map((e: FieldError) => `${e.path ? `${e.path}: ` : ''}${e.message}`));
        setError(err.problem.detail);
      } else setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const reject = async () => {
    setError(undefined);
    if (!reason.trim()) return setReasonError('Say why, for the agent and the audit log.');
    setReasonError(undefined);
    setBusy(true);
    try {
      await ok(api.POST('/api/v1/approvals/{id}/reject', { params: { path: { id: a.id } }, body: { reason: reason.trim() } }));
      onDecided(`Rejected ${a.tool}.`);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <li className="card approval" aria-labelledby={titleId}>
      <h3 id={titleId}>
        <code>{visibleText(a.tool)}</code> for {agentName}
      </h3>
      <dl className="facts">
        <dt>Agent</dt>
        <dd>
          {agentName} (version {a.version})
        </dd>
        <dt>Tool</dt>
        <dd>
          <code>{visibleText(`${a.capabilityId}/${a.toolId}`)}</code>
        </dd>
        <dt>Risk</dt>
        <dd>{risk ? <span className={`risk risk--${risk}`}>{risk.replace('_', ' ')}</span> : 'as its connection says'}</dd>
        <dt>Why it waits</dt>
        <dd>{REASONS[a.reason] ?? a.reason}</dd>
        <dt>Requested</dt>
        <dd>
          {formatTime(a.createdAt)} by <PrincipalName id={a.requestedBy} names={names} />
        </dd>
        <dt>Expires</dt>
        <dd>{formatTime(a.expiresAt)}</dd>
      </dl>
      {mode === 'edit' ? (
        <div className="field">
          <label htmlFor={argsId}>Arguments</label>
          <p className="help" id={`${argsId}-help`}>
            JSON. The tool runs with exactly these; the original arguments stay on record beside them.
          </p>
          <textarea
            id={argsId}
            className="code"
            rows={8}
            value={args}
            onChange={(e) => setArgs(e.target.value)}
            aria-invalid={argErrors.length > 0 || undefined}
            aria-describedby={`${argsId}-help${argErrors.length ? ` ${argsId}-error` : ''}`}
          />
          {argErrors.length > 0 && (
            <p className="field-error" id={`${argsId}-error`}>
              {argErrors.join(' ')}
            </p>
          )}
        </div>
      ) : (
        <JsonView label={`Arguments of ${visibleText(a.tool)}`} value={a.arguments} />
      )}
      <Alert>{error}</Alert>
      {mayDecide && (
        <div className="actions">
          <button type="button" className="primary" disabled={busy} onClick={() => void approve()}>
            Approve
          </button>
          {mode !== 'edit' ? (
            <button type="button" disabled={busy} onClick={() => setMode('edit')}>
              Edit arguments
            </button>
          ) : (
            <button
              type="button"
              disabled={busy}
              onClick={() => {
                setMode('idle');
                setArgs(visibleJson(a.arguments));
                setArgErrors([]);
              }}
            >
              Discard edits
            </button>
          )}
          {mode !== 'reject' && (
            <button type="button" disabled={busy} onClick={() => setMode('reject')}>
              Reject
            </button>
          )}
        </div>
      )}
      {mayDecide && mode === 'reject' && (
        <div className="reject">
          <div className="field">
            <label htmlFor={`${titleId}-reason`}>Reason</label>
            <input
              id={`${titleId}-reason`}
              type="text"
              value={reason}
              maxLength={2000}
              onChange={(e) => setReason(e.target.value)}
              aria-invalid={reasonError ? true : undefined}
              aria-describedby={reasonError ? `${titleId}-reason-error` : undefined}
            />
            {reasonError && (
              <p className="field-error" id={`${titleId}-reason-error`}>
                {reasonError}
              </p>
            )}
          </div>
          <div className="actions">
            <button type="button" className="danger" disabled={busy} onClick={() => void reject()}>
              Confirm reject
            </button>
            <button type="button" disabled={busy} onClick={() => setMode('idle')}>
              Cancel
            </button>
          </div>
        </div>
      )}
    </li>
  );
}
