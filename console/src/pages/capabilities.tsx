import { ok } from '../api/client';
import { Alert, JsonView, useLoad } from '../components/feedback';
import { PageTitle } from '../router';
import { useSession } from '../session';

/** The catalog as the code declares it: what each capability offers, what it needs, what waits for a person. */
export function CapabilitiesPage() {
  const { api } = useSession();
  const catalog = useLoad(() => ok(api.GET('/api/v1/agents/capabilities')), [api]);
  return (
    <>
      <PageTitle>Capabilities</PageTitle>
      <Alert>{catalog.error}</Alert>
      {catalog.data?.items.map((c) => (
        <section key={c.id} className="card" aria-labelledby={`cap-${c.id}`}>
          <h2 id={`cap-${c.id}`}>
            {c.name} <code className="muted small">{c.id}</code>
          </h2>
          <p>{c.description}</p>
          <dl className="facts">
            <dt>Category</dt>
            <dd>{c.category}</dd>
            <dt>Risk</dt>
            <dd>
              <span className={`risk risk--${c.risk}`}>{c.risk.replace('_', ' ')}</span>
            </dd>
            <dt>Scopes</dt>
            <dd>{c.scopes.length ? c.scopes.join(', ') : 'none'}</dd>
            {c.available !== undefined && (
              <>
                <dt>Available</dt>
                <dd>{c.available ? 'yes' : 'no: this organization lacks a scope it needs'}</dd>
              </>
            )}
            {c.tags.length > 0 && (
              <>
                <dt>Tags</dt>
                <dd>{c.tags.join(', ')}</dd>
              </>
            )}
          </dl>
          {c.tools.length > 0 ? (
            <table>
              <caption>Tools of {c.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Risk</th>
                  <th scope="col">Approval</th>
                  <th scope="col">Description</th>
                </tr>
              </thead>
              <tbody>
                {c.tools.map((t) => (
                  <tr key={t.id}>
                    <td>
                      <code>{t.id}</code>
                    </td>
                    <td>
                      <span className={`risk risk--${t.risk}`}>{t.risk.replace('_', ' ')}</span>
                    </td>
                    <td>{t.requiresApproval ? 'always' : 'when the spec asks'}</td>
                    <td>{t.description}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="muted">No tools: it contributes settings or prompt text.</p>
          )}
          <details>
            <summary>Configuration schema of {c.name}</summary>
            <JsonView label={`Configuration schema of ${c.name}`} value={c.configSchema} />
          </details>
        </section>
      ))}
    </>
  );
}
