import { useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { Alert, errorMap, FieldErrors, fieldErrorProps, fieldId, formatTime, ShowMore, Status, useLoad, usePages, visibleText } from '../components/feedback';
import { PageTitle } from '../router';
import { MoveConnection } from './mcp-move-connection';
import { can, useSession } from '../session';

type Entry = Schemas['McpServerEntryView'];
type Connection = Schemas['McpConnectionView'];
type Risk = Schemas['SetMcpToolRiskDto']['risk'];

const RISKS: Risk[] = ['read_only', 'mutating', 'destructive'];
const RISK_SOURCES: Record<string, string> = {
  admin: "an admin's decision",
  annotations: "the server's annotations (this entry trusts them)",
  default: 'the default for an untrusted server',
};

/** The MCP catalog (code) and the organization's connections to it (data): tools listed, risks decided by a person. */
export function McpServersPage() {
  const { api, me } = useSession();
  const entries = useLoad(() => ok(api.GET('/api/v1/mcp-servers')), [api]);
  // A page ends at about 4 MiB of items: a few connections listing large tools fill it.
  const connections = usePages((cursor) => ok(api.GET('/api/v1/mcp-connections', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const [status, setStatus] = useState<string>();
  const admin = can(me, 'admin');
  return (
    <>
      <PageTitle>MCP servers</PageTitle>
      <Status>{status}</Status>
      <Alert>{connections.error ?? entries.error}</Alert>
      <h2>Connections</h2>
      {connections.data && connections.data.items.length === 0 && <p className="muted">No connections yet.</p>}
      <ul className="plain">
        {connections.data?.items.map((c) => (
          <ConnectionCard
            key={c.id}
            connection={c}
            entry={entries.data?.items.find((e) => e.id === c.server)}
            admin={admin}
            onChanged={(message) => (setStatus(message), connections.reload())}
          />
        ))}
      </ul>
      <ShowMore list={connections}>Show more connections</ShowMore>
      {admin && entries.data && (
        <NewConnection entries={entries.data.items} onCreated={(name) => (setStatus(`Connected “${visibleText(name)}”.`), connections.reload())} />
      )}
      <h2>Catalog</h2>
      <table>
        <caption className="visually-hidden">MCP servers this platform can connect</caption>
        <thead>
          <tr>
            <th scope="col">Server</th>
            <th scope="col">Transport</th>
            <th scope="col">Scopes</th>
            <th scope="col">Annotations</th>
            <th scope="col">Available</th>
          </tr>
        </thead>
        <tbody>
          {entries.data?.items.map((e) => (
            <tr key={e.id}>
              <td>
                {e.name} <code className="muted small">{e.id}</code>
                <div className="muted small">{e.description}</div>
              </td>
              <td>{e.transport}</td>
              <td>{e.scopes.length ? e.scopes.join(', ') : 'none'}</td>
              <td>{e.trustAnnotations ? 'trusted' : 'never lower a risk'}</td>
              <td>{e.available === false ? 'no: a scope is missing' : 'yes'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function ConnectionCard({
  connection: c,
  entry,
  admin,
  onChanged,
}: {
  connection: Connection;
  entry: Entry | undefined;
  admin: boolean;
  onChanged(message: string): void;
}) {
  const { api } = useSession();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  /** True when the work was done. */
  const act = async (work: () => Promise<unknown>, message: string): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await work();
      onChanged(message);
      return true;
    } catch (err) {
      setError(messageOf(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  const titleId = `connection-${c.id}`;
  return (
    <li className="card" aria-labelledby={titleId}>
      <h3 id={titleId}>
        {c.name} <code className="muted small">{c.server}</code>
      </h3>
      <dl className="facts">
        <dt>Status</dt>
        <dd>{c.status === 'ready' ? 'ready' : `error: ${c.error?.message ?? 'unknown'} (${c.error?.code ?? ''})`}</dd>
        {c.url && (
          <>
            <dt>URL</dt>
            <dd>
              <code>{c.url}</code>
            </dd>
          </>
        )}
        <dt>Credentials</dt>
        <dd>{c.credentialNames.length ? `${c.credentialNames.join(', ')} (stored encrypted, never shown)` : 'none'}</dd>
        <dt>Tools listed</dt>
        <dd>{formatTime(c.syncedAt)}</dd>
      </dl>
      <Alert>{error}</Alert>
      <table>
        <caption>Tools of {c.name}</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Risk</th>
            <th scope="col">Decided by</th>
            <th scope="col">Description</th>
          </tr>
        </thead>
        <tbody>
          {c.tools.map((t) => (
            <tr key={t.name}>
              <td>
                <code>{visibleText(t.name)}</code>
              </td>
              <td>
                {admin ? (
                  <>
                    <label className="visually-hidden" htmlFor={`risk-${c.id}-${t.name}`}>
                      Risk of {c.name}/{visibleText(t.name)}
                    </label>
                    <select
                      id={`risk-${c.id}-${t.name}`}
                      value={t.risk}
                      disabled={busy}
                      onChange={(e) =>
                        void act(
                          () =>
                            ok(
                              api.PUT('/api/v1/mcp-connections/{id}/tools/{tool}/risk', {
                                params: { path: { id: c.id, tool: t.name } },
                                body: { risk: e.target.value as Risk },
                              }),
                            ),
                          `${c.name}/${visibleText(t.name)} is now ${e.target.value.replace('_', ' ')}.`,
                        )
                      }
                    >
                      {RISKS.map((r) => (
                        <option key={r} value={r}>
                          {r.replace('_', ' ')}
                        </option>
                      ))}
                    </select>
                  </>
                ) : (
                  <span className={`risk risk--${t.risk}`}>{t.risk.replace('_', ' ')}</span>
                )}
              </td>
              <td>{RISK_SOURCES[t.riskSource] ?? t.riskSource}</td>
              <td>{visibleText(t.description)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {admin && (
        <div className="actions">
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              void act(
                () => ok(api.POST('/api/v1/mcp-connections/{id}/sync', { params: { path: { id: c.id } } })),
                `Listed the tools of “${visibleText(c.name)}” again.`,
              )
            }
          >
            Sync {visibleText(c.name)}
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => {
              if (window.confirm(`Delete the connection “${visibleText(c.name)}”?`))
                void act(() => ok(api.DELETE('/api/v1/mcp-connections/{id}', { params: { path: { id: c.id } } })), `Deleted “${visibleText(c.name)}”.`);
            }}
          >
            Delete {visibleText(c.name)}
          </button>
        </div>
      )}
      {admin && c.url && (
        <MoveConnection
          connection={c}
          entry={entry}
          busy={busy}
          onMove={(url, credentials) =>
            act(
              () => ok(api.PUT('/api/v1/mcp-connections/{id}/url', { params: { path: { id: c.id } }, body: { url, ...(credentials ? { credentials } : {}) } })),
              `Moved “${visibleText(c.name)}” to its new URL, and listed its tools there.`,
            )
          }
        />
      )}
    </li>
  );
}

function NewConnection({ entries, onCreated }: { entries: Entry[]; onCreated(name: string): void }) {
  const { api } = useSession();
  const [server, setServer] = useState(entries.find((e) => e.available !== false)?.id ?? '');
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [credentials, setCredentials] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const entry = entries.find((e) => e.id === server);
  const map = errorMap(errors);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    setBusy(true);
    try {
      const filled = Object.fromEntries(Object.entries(credentials).filter(([k, v]) => v !== '' && entry?.credentials.some((c) => c.name === k)));
      await ok(
        api.POST('/api/v1/mcp-connections', {
          body: { server, name, ...(entry?.urlRequired ? { url } : {}), ...(Object.keys(filled).length ? { credentials: filled } : {}) },
        }),
      );
      setName('');
      setUrl('');
      setCredentials({});
      onCreated(name);
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors) setErrors(err.problem.errors);
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-connection-title" noValidate>
      <h2 id="new-connection-title">New connection</h2>
      <p className="help">The server is reached and its tools listed before anything is stored.</p>
      <Alert>{error}</Alert>
      <div className="field">
        <label htmlFor={fieldId('server')}>Server</label>
        <select id={fieldId('server')} value={server} onChange={(e) => setServer(e.target.value)} {...fieldErrorProps(map, 'server')}>
          {entries.map((e) => (
            <option key={e.id} value={e.id} disabled={e.available === false}>
              {e.name}
              {e.available === false ? ' (needs a scope)' : ''}
            </option>
          ))}
        </select>
        <FieldErrors errors={map} path="server" />
      </div>
      <div className="field">
        <label htmlFor={fieldId('name')}>Connection name</label>
        <input id={fieldId('name')} type="text" value={name} onChange={(e) => setName(e.target.value)} {...fieldErrorProps(map, 'name')} />
        <FieldErrors errors={map} path="name" />
      </div>
      {entry?.urlRequired && (
        <div className="field">
          <label htmlFor={fieldId('url')}>URL</label>
          <input id={fieldId('url')} type="text" inputMode="url" value={url} onChange={(e) => setUrl(e.target.value)} {...fieldErrorProps(map, 'url')} />
          <FieldErrors errors={map} path="url" />
        </div>
      )}
      {entry?.credentials.map((c) => {
        const path = `credentials.${c.name}`;
        return (
          <div className="field" key={c.name}>
            <label htmlFor={fieldId(path)}>
              {c.name}
              {c.required ? '' : ' (optional)'}
            </label>
            <p className="help">{c.description}</p>
            <input
              id={fieldId(path)}
              type="password"
              autoComplete="off"
              value={credentials[c.name] ?? ''}
              onChange={(e) => setCredentials({ ...credentials, [c.name]: e.target.value })}
              {...fieldErrorProps(map, path)}
            />
            <FieldErrors errors={map} path={path} />
          </div>
        );
      })}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy || !server}>
          Connect
        </button>
      </div>
    </form>
  );
}
