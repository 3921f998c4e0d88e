import { useEffect, useState, type FormEvent } from 'react';
import { messageOf, ok, type Schemas } from '../api/client';
import { AUDIT_EVENT_TYPES as TYPES, type EventType } from '../audit-types';
import { Actor, ShortId, usePrincipalNames } from '../components/actor';
import { Alert, formatTime, JsonView } from '../components/feedback';
import { PageTitle } from '../router';
import { useSession } from '../session';

type AuditEvent = Schemas['AuditEventView'];
type Query = { type?: EventType; since?: string };

export function AuditLogPage() {
  const { api } = useSession();
  const [type, setType] = useState('');
  const [since, setSince] = useState('');
  const [query, setQuery] = useState<Query>({});
  const [items, setItems] = useState<AuditEvent[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(false);

  const load = async (q: Query, after: string | null) => {
    setLoading(true);
    setError(undefined);
    try {
      const page = await ok(
        api.GET('/api/v1/audit-events', {
          params: { query: { limit: 50, ...(q.type ? { type: q.type } : {}), ...(q.since ? { since: q.since } : {}), ...(after ? { cursor: after } : {}) } },
        }),
      );
      setItems((old) => (after ? [...old, ...page.items] : page.items));
      setCursor(page.nextCursor);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    // A new query starts from the first page; `load` is recreated each render and is not a reason to reload.
    void load(query, null);
  }, [query]);

  const names = usePrincipalNames(items.filter((e) => e.actor.type === 'api_key').map((e) => e.actor.id));

  const apply = (e: FormEvent) => {
    e.preventDefault();
    // datetime-local is the browser's local time; the API takes an instant.
    const at = since ? new Date(since) : undefined;
    setQuery({ type: (type || undefined) as EventType | undefined, since: at && !Number.isNaN(at.getTime()) ? at.toISOString() : undefined });
  };

  return (
    <>
      <PageTitle>Audit log</PageTitle>
      <form className="filters" onSubmit={apply} aria-label="Filters">
        <div className="field">
          <label htmlFor="audit-type">Type</label>
          <select id="audit-type" value={type} onChange={(e) => setType(e.target.value)}>
            <option value="">All types</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-since">Since</label>
          <input id="audit-since" type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
        </div>
        <div className="actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      <Alert>{error}</Alert>
      <table>
        <caption className="visually-hidden">Audit events, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Type</th>
            <th scope="col">Actor</th>
            <th scope="col">Target</th>
            <th scope="col">Data</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={e.id}>
              <td>{formatTime(e.at)}</td>
              <td>
                <code>{e.type}</code>
              </td>
              <td>
                <Actor type={e.actor.type} id={e.actor.id} names={names} />
              </td>
              <td>
                {e.target.type} <ShortId id={e.target.id} />
              </td>
              <td>
                <details>
                  <summary>Data of event {e.id}</summary>
                  <JsonView label={`Data of event ${e.id}`} value={e.data} />
                </details>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {!loading && items.length === 0 && <p className="muted">No events match.</p>}
      {cursor && (
        <button type="button" disabled={loading} onClick={() => void load(query, cursor)}>
          Load more
        </button>
      )}
    </>
  );
}
