import { useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError } from '../api/client';
import {
  Alert,
  errorId,
  errorMap,
  fieldErrorProps,
  FieldErrors,
  fieldId,
  formatTime,
  ShowMore,
  Status,
  useLoad,
  usePages,
  visibleText,
} from '../components/feedback';
import { PageTitle } from '../router';
import { useSession } from '../session';

const ROLES = [
  ['viewer', 'reads agents, versions, calls, approvals and resources'],
  ['builder', 'viewer, and creates agents, edits drafts, publishes, manages knowledge and skills'],
  ['agent', 'reads versions and manifests, calls tools'],
  ['approver', 'viewer, and approves or rejects calls'],
  ['admin', 'everything in the organization, including API keys and the audit log'],
] as const;

type Role = (typeof ROLES)[number][0];

export function ApiKeysPage() {
  const { api, me } = useSession();
  const orgId = me.orgId!;
  // Newest first, revoked keys included: past the first page, a key made before 200 others (made
  // and revoked to bury it) must still be reachable.
  const keys = usePages(
    (cursor) => ok(api.GET('/api/v1/orgs/{orgId}/api-keys', { params: { path: { orgId }, query: { limit: 200, ...(cursor ? { cursor } : {}) } } })),
    [api, orgId],
  );
  const policy = useLoad(() => ok(api.GET('/api/v1/orgs/{orgId}/api-key-policy', { params: { path: { orgId } } })), [api, orgId]);
  // To name the agents a key is pinned to, and to pick them: every page, an organization may have more than 200.
  const agents = usePages((cursor) => ok(api.GET('/api/v1/agents', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const agentName = (id: string) => visibleText(agents.data?.items.find((a) => a.id === id)?.name ?? id);
  const [name, setName] = useState('');
  const [roles, setRoles] = useState<Role[]>([]);
  const [pins, setPins] = useState<string[]>([]);
  // Only a runtime's key (the agent role alone) may be pinned: the server refuses the others at `agentIds`.
  const pinnable = roles.length === 1 && roles[0] === 'agent';
  // A local date and time from the picker (empty: no expiry), sent as the instant it names.
  const [expires, setExpires] = useState('');
  const [created, setCreated] = useState<{ name: string; token: string }>();
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();
  const map = errorMap(errors);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    setCreated(undefined);
    try {
      const expiresAt = expires ? localInstant(expires) : undefined;
      const key = await ok(
        api.POST('/api/v1/orgs/{orgId}/api-keys', {
          params: { path: { orgId } },
          body: { name, roles, ...(expiresAt ? { expiresAt } : {}), ...(pinnable && pins.length > 0 ? { agentIds: pins } : {}) },
        }),
      );
      setCreated({ name: key.name, token: key.token });
      setName('');
      setRoles([]);
      setPins([]);
      setExpires('');
      keys.reload();
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors) setErrors(err.problem.errors);
      setError(messageOf(err));
    }
  };
  const revoke = async (id: string, keyName: string) => {
    if (!window.confirm(`Revoke the key “${visibleText(keyName)}”? Everything using it is refused from now on.`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/orgs/{orgId}/api-keys/{keyId}', { params: { path: { orgId, keyId: id } } }));
      setStatus(`Revoked “${visibleText(keyName)}”.`);
      keys.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <>
      <PageTitle>API keys</PageTitle>
      <Alert>{error ?? keys.error}</Alert>
      <Status>{status}</Status>
      {created && (
        <div className="card notice" role="region" aria-label="New key">
          <h2>Key “{created.name}” created</h2>
          <p>Copy the token now: it is shown this once and never again.</p>
          <label htmlFor="new-token">New token</label>
          <input id="new-token" type="text" readOnly value={created.token} onFocus={(e) => e.target.select()} spellCheck={false} />
          <button type="button" onClick={() => setCreated(undefined)}>
            Done, hide the token
          </button>
        </div>
      )}
      {keys.data && (
        <table>
          <caption className="visually-hidden">API keys of this organization</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Roles</th>
              <th scope="col">Agents</th>
              <th scope="col">Prefix</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data.items.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>{k.roles.join(', ')}</td>
                <td>{k.agentIds ? k.agentIds.map(agentName).join(', ') : 'all'}</td>
                <td>
                  <code>{k.tokenPrefix}</code>
                </td>
                <td>{formatTime(k.createdAt)}</td>
                <td>{k.expiresAt ? `${Date.parse(k.expiresAt) <= Date.now() ? 'expired ' : ''}${formatTime(k.expiresAt)}` : 'never'}</td>
                <td>{k.lastUsedAt ? formatTime(k.lastUsedAt) : 'not yet'}</td>
                <td>
                  {k.revokedAt ? (
                    `revoked ${formatTime(String(k.revokedAt))}`
                  ) : k.id === me.id ? (
                    'this key'
                  ) : (
                    <button type="button" className="danger" onClick={() => void revoke(k.id, k.name)}>
                      Revoke {visibleText(k.name)}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowMore list={keys}>Show older keys</ShowMore>
      <form className="card" onSubmit={create} aria-labelledby="new-key-title" noValidate>
        <h2 id="new-key-title">New API key</h2>
        <div className="field">
          <label htmlFor={fieldId('name')}>Name</label>
          <input id={fieldId('name')} type="text" value={name} onChange={(e) => setName(e.target.value)} {...fieldErrorProps(map, 'name')} />
          <FieldErrors errors={map} path="name" />
        </div>
        <fieldset id={fieldId('roles')} {...fieldErrorProps(map, 'roles')}>
          <legend>Roles</legend>
          {ROLES.map(([role, what]) => (
            <div key={role} className="field--check">
              <input
                type="checkbox"
                id={`role-${role}`}
                checked={roles.includes(role)}
                onChange={(e) => setRoles(e.target.checked ? [...roles, role] : roles.filter((r) => r !== role))}
                aria-describedby={`role-${role}-help`}
              />
              <label htmlFor={`role-${role}`}>{role}</label>
              <span id={`role-${role}-help`} className="help inline">
                {what}
              </span>
            </div>
          ))}
          <FieldErrors errors={map} path="roles" />
        </fieldset>
        {pinnable && (
          <fieldset
            id={fieldId('agentIds')}
            {...fieldErrorProps(map, 'agentIds')}
            aria-describedby={map.has('agentIds') ? `${errorId('agentIds')} agents-help` : 'agents-help'}
          >
            <legend>Agents (optional)</legend>
            <p id="agents-help" className="help">
              The agents this runtime key may act for: any other is missing to it. None checked: every agent.
            </p>
            {agents.data?.items.map((a) => {
              const at = pins.indexOf(a.id);
              const path = `agentIds[${at}]`;
              return (
                <div key={a.id} className="field--check">
                  <input
                    type="checkbox"
                    id={`agent-${a.id}`}
                    checked={at >= 0}
                    onChange={(e) => setPins(e.target.checked ? [...pins, a.id] : pins.filter((p) => p !== a.id))}
                    {...(at >= 0 ? fieldErrorProps(map, path) : {})}
                  />
                  <label htmlFor={`agent-${a.id}`}>{visibleText(a.name)}</label>
                  {at >= 0 && <FieldErrors errors={map} path={path} />}
                </div>
              );
            })}
            <ShowMore list={agents}>Show more agents</ShowMore>
            <FieldErrors errors={map} path="agentIds" />
          </fieldset>
        )}
        <div className="field">
          <label htmlFor={fieldId('expiresAt')}>Expires (optional)</label>
          <input
            id={fieldId('expiresAt')}
            type="datetime-local"
            value={expires}
            onChange={(e) => setExpires(e.target.value)}
            {...fieldErrorProps(map, 'expiresAt')}
            aria-describedby={map.has('expiresAt') ? `${errorId('expiresAt')} expires-help` : 'expires-help'}
          />
          <span id="expires-help" className="help">
            In your time zone. From then on the key is refused, and what it opened ends.{' '}
            {policy.data?.maxLifetimeDays
              ? `At most ${policy.data.maxLifetimeDays} days from now (the organization's key policy); empty: that long.`
              : 'Empty: until it is revoked.'}
          </span>
          <FieldErrors errors={map} path="expiresAt" />
        </div>
        <div className="actions">
          <button type="submit" className="primary">
            Create key
          </button>
        </div>
      </form>
      {policy.data && <KeyPolicy orgId={orgId} days={policy.data.maxLifetimeDays} saved={policy.reload} />}
    </>
  );
}

/** The longest a new key may live (`PUT .../api-key-policy`): keys made before keep their expiry. */
function KeyPolicy({ orgId, days, saved }: { orgId: string; days: number | null; saved: () => void }) {
  const { api } = useSession();
  const [value, setValue] = useState(days === null ? '' : String(days));
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();
  const map = errorMap(errors);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    try {
      // An empty field lifts the bound; anything else is sent as typed, for the server to judge at its field.
      const maxLifetimeDays = value.trim() === '' ? null : Number(value);
      const set = await ok(api.PUT('/api/v1/orgs/{orgId}/api-key-policy', { params: { path: { orgId } }, body: { maxLifetimeDays } }));
      setStatus(set.maxLifetimeDays === null ? 'New keys may live until they are revoked.' : `New keys live at most ${set.maxLifetimeDays} days.`);
      saved();
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors) setErrors(err.problem.errors);
      setError(messageOf(err));
    }
  };
  return (
    <form className="card" onSubmit={save} aria-labelledby="key-policy-title" noValidate>
      <h2 id="key-policy-title">Key lifetime</h2>
      <Alert>{error}</Alert>
      <Status>{status}</Status>
      <div className="field">
        <label htmlFor={fieldId('maxLifetimeDays')}>Longest lifetime of a new key, in days</label>
        <input
          id={fieldId('maxLifetimeDays')}
          type="number"
          min={1}
          max={3650}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          {...fieldErrorProps(map, 'maxLifetimeDays')}
          aria-describedby={map.has('maxLifetimeDays') ? `${errorId('maxLifetimeDays')} key-policy-help` : 'key-policy-help'}
        />
        <span id="key-policy-help" className="help">
          Empty: no bound. Keys made before keep their expiry; revoke them to apply a new one.
        </span>
        <FieldErrors errors={map} path="maxLifetimeDays" />
      </div>
      <div className="actions">
        <button type="submit">Save key lifetime</button>
      </div>
    </form>
  );
}

/** A `datetime-local` value (the browser's local time) as the ISO instant it names; an unreadable one as typed, for the server to refuse at its field. */
function localInstant(value: string): string {
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? value : at.toISOString();
}
