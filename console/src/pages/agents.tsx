import { useState, type FormEvent } from 'react';
import { ok, ProblemError, type FieldError } from '../api/client';
import { Alert, errorMap, FieldErrors, fieldErrorProps, fieldId, formatTime, ShowMore, usePages, visibleText } from '../components/feedback';
import { Link, navigate, PageTitle } from '../router';
import { can, useSession } from '../session';

export function AgentsPage() {
  const { api, me } = useSession();
  const agents = usePages((cursor) => ok(api.GET('/api/v1/agents', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const [creating, setCreating] = useState(false);
  return (
    <>
      <PageTitle>Agents</PageTitle>
      {can(me, 'build') && !creating && (
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New agent
        </button>
      )}
      {creating && <NewAgentForm onCancel={() => setCreating(false)} />}
      <Alert>{agents.error}</Alert>
      {agents.data &&
        (agents.data.items.length === 0 ? (
          <p className="muted">No agents yet.</p>
        ) : (
          <table>
            <caption className="visually-hidden">Agents of this organization</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Slug</th>
                <th scope="col">Latest version</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {agents.data.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link to={`/agents/${a.id}`}>{visibleText(a.name)}</Link>
                    {a.description && <div className="muted small">{a.description}</div>}
                  </td>
                  <td>
                    <code>{a.slug}</code>
                  </td>
                  <td>{a.latestVersion ?? 'never published'}</td>
                  <td>{formatTime(a.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      <ShowMore list={agents}>Show more agents</ShowMore>
    </>
  );
}

function NewAgentForm({ onCancel }: { onCancel(): void }) {
  const { api } = useSession();
  const [slug, setSlug] = useState('');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const map = errorMap(errors);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setErrors([]);
    setError(undefined);
    try {
      const agent = await ok(api.POST('/api/v1/agents', { body: { slug, name, ...(description ? { description } : {}) } }));
      navigate(`/agents/${agent.id}`);
    } catch (err) {
      if (err instanceof ProblemError) {
        setErrors(err.problem.errors ?? (err.problem.code === 'conflict' ? [{ path: 'slug', message: err.problem.detail }] : []));
        setError(err.problem.detail);
      } else setError(String(err));
    } finally {
      setBusy(false);
    }
  };
  const field = (path: string, label: string, value: string, set: (v: string) => void, help?: string) => (
    <div className="field">
      <label htmlFor={fieldId(path)}>{label}</label>
      {help && (
        <p className="help" id={`${fieldId(path)}-help`}>
          {help}
        </p>
      )}
      <input
        id={fieldId(path)}
        type="text"
        value={value}
        onChange={(e) => set(e.target.value)}
        {...fieldErrorProps(map, path)}
        aria-describedby={[help ? `${fieldId(path)}-help` : '', fieldErrorProps(map, path)['aria-describedby'] ?? ''].join(' ').trim() || undefined}
      />
      <FieldErrors errors={map} path={path} />
    </div>
  );
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-agent-title">
      <h2 id="new-agent-title">New agent</h2>
      <Alert>{error}</Alert>
      {field('slug', 'Slug', slug, setSlug, 'Lowercase letters, digits and dashes; unique in the organization.')}
      {field('name', 'Name', name, setName)}
      {field('description', 'Description', description, setDescription)}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Create
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
