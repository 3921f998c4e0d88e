import { useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { Alert, errorMap, fieldErrorProps, FieldErrors, fieldId, formatTime, ShowMore, Status, usePages, visibleText } from '../components/feedback';
import { SimpleForm } from '../components/simple-form';
import { PageTitle } from '../router';
import { can, useSession } from '../session';

type Provider = Schemas['ModelProviderView'];

/**
 * The model providers an agent's runs call (Chat Completions with tools). Every role reads them, to
 * pick one in the agent editor; an admin connects one, replaces or removes its key (a key leaked or
 * rotated at the vendor: the next model request of every run sends the new one), and deletes one
 * no published version names. A stored key is never shown again, here or anywhere.
 */
export function ModelProvidersPage() {
  const { api, me } = useSession();
  const admin = can(me, 'admin');
  const providers = usePages((cursor) => ok(api.GET('/api/v1/model-providers', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const [replacing, setReplacing] = useState<string>();

  const remove = async (p: Provider) => {
    if (!window.confirm(`Delete the model provider “${visibleText(p.name)}”? Agents whose drafts name it cannot publish until they name another.`)) return;
    setError(undefined);
    setStatus(undefined);
    try {
      await ok(api.DELETE('/api/v1/model-providers/{id}', { params: { path: { id: p.id } } }));
      setStatus(`Deleted the model provider “${visibleText(p.name)}”.`);
      providers.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <>
      <PageTitle>Model providers</PageTitle>
      <Alert>{error ?? providers.error}</Alert>
      <Status>{status}</Status>
      {providers.data && providers.data.items.length === 0 && <p className="muted">No model providers yet: an agent needs one to run.</p>}
      {providers.data && providers.data.items.length > 0 && (
        <table>
          <caption className="visually-hidden">Model providers of this organization</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Base URL</th>
              <th scope="col">API key</th>
              <th scope="col">Created</th>
              {admin && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {providers.data.items.map((p) => (
              <tr key={p.id}>
                <td>{p.name}</td>
                <td>
                  <code>{p.baseUrl}</code>
                </td>
                <td>{p.hasApiKey ? 'stored' : 'none'}</td>
                <td>{formatTime(p.createdAt)}</td>
                {admin && (
                  <td className="actions">
                    <button type="button" aria-expanded={replacing === p.id} onClick={() => setReplacing(replacing === p.id ? undefined : p.id)}>
                      Replace the key of {p.name}
                    </button>
                    <button type="button" className="danger" onClick={() => void remove(p)}>
                      Delete {visibleText(p.name)}
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowMore list={providers}>Show more providers</ShowMore>
      {admin && replacing && providers.data?.items.some((p) => p.id === replacing) && (
        <ReplaceKey
          key={replacing}
          provider={providers.data.items.find((p) => p.id === replacing)!}
          onDone={(message) => {
            setReplacing(undefined);
            setStatus(message);
            providers.reload();
          }}
        />
      )}
      {admin && (
        <SimpleForm
          title="Connect a model provider"
          submitLabel="Connect provider"
          fields={[
            { name: 'name', label: 'Name', required: true, help: 'Lower-case letters, digits and dashes; unique in the organization.' },
            { name: 'baseUrl', label: 'Base URL', required: true, help: 'The API the client appends /chat/completions to, e.g. https://api.openai.com/v1.' },
            {
              name: 'apiKey',
              label: 'API key',
              kind: 'secret',
              help: 'Sent as a bearer token; stored sealed and never shown again. Leave empty for a local server.',
            },
          ]}
          submit={async (v) => {
            const created = await ok(
              api.POST('/api/v1/model-providers', {
                body: { name: v.name.trim(), kind: 'openai-compatible', baseUrl: v.baseUrl.trim(), ...(v.apiKey ? { apiKey: v.apiKey } : {}) },
              }),
            );
            setStatus(`Connected the model provider “${visibleText(created.name)}”.`);
            providers.reload();
          }}
        />
      )}
    </>
  );
}

/** A new key for a provider, or none: what its next model request sends, on every node. */
function ReplaceKey({ provider, onDone }: { provider: Provider; onDone(message: string): void }) {
  const { api } = useSession();
  const [apiKey, setApiKey] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const map = errorMap(errors);
  const put = async (value: string | null) => {
    setErrors([]);
    setError(undefined);
    if (value === '') return setErrors([{ path: 'apiKey', message: 'Type the new key, or remove the stored one.' }]);
    setBusy(true);
    try {
      const saved = await ok(api.PUT('/api/v1/model-providers/{id}/api-key', { params: { path: { id: provider.id } }, body: { apiKey: value } }));
      onDone(
        saved.hasApiKey
          ? `Replaced the key of “${visibleText(saved.name)}”: its next model request sends the new one.`
          : `Removed the key of “${visibleText(saved.name)}”.`,
      );
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors?.length) setErrors(err.problem.errors);
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void put(apiKey);
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="replace-key-title" noValidate>
      <h2 id="replace-key-title">Replace the key of {provider.name}</h2>
      <Alert>{error}</Alert>
      <div className="field">
        <label htmlFor={fieldId('apiKey')}>New API key</label>
        <input
          id={fieldId('apiKey')}
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={apiKey}
          onChange={(e) => setApiKey(e.target.value)}
          {...fieldErrorProps(map, 'apiKey')}
        />
        <FieldErrors errors={map} path="apiKey" />
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Save the new key
        </button>
        {provider.hasApiKey && (
          <button type="button" className="danger" disabled={busy} onClick={() => void put(null)}>
            Remove the stored key
          </button>
        )}
      </div>
    </form>
  );
}
