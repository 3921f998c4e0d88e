import { useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { Alert, errorMap, fieldErrorProps, FieldErrors, fieldId, formatTime, ShowMore, Status, useLoad, usePages, visibleText } from '../components/feedback';
import { AUDIT_EVENT_TYPES } from '../audit-types';
import { PageTitle } from '../router';
import { useSession } from '../session';

/** Webhook endpoints (admin): audit events POSTed, signed (Standard Webhooks), retried; their deliveries. */
export function WebhooksPage() {
  const { api } = useSession();
  // Every endpoint an organization's events go to must be reachable, past the first page too.
  const hooks = usePages((cursor) => ok(api.GET('/api/v1/webhooks', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const [open, setOpen] = useState<string>();
  const [rotating, setRotating] = useState<string>();
  const [created, setCreated] = useState<{ url: string; secret: string; previousUntil?: string | null }>();
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const remove = async (id: string, url: string) => {
    if (!window.confirm(`Delete the webhook to ${visibleText(url)}? Nothing more is delivered to it.`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/webhooks/{id}', { params: { path: { id } } }));
      setStatus(`Deleted the webhook to ${url}.`);
      hooks.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <>
      <PageTitle>Webhooks</PageTitle>
      <Alert>{error ?? hooks.error}</Alert>
      <Status>{status}</Status>
      {created && (
        <div className="card notice" role="region" aria-label="New webhook secret">
          <h2>{created.previousUntil === undefined ? `Webhook to ${created.url} created` : `New signing secret for ${created.url}`}</h2>
          <p>Copy the signing secret now: it is shown this once and never again.</p>
          {created.previousUntil !== undefined && (
            <p>
              {created.previousUntil
                ? `Until ${formatTime(created.previousUntil)} every delivery is signed with both secrets, so receivers can switch at their pace.`
                : 'Deliveries are signed with the new secret only, from now on.'}
            </p>
          )}
          <label htmlFor="new-secret">Signing secret</label>
          <input id="new-secret" type="text" readOnly value={created.secret} onFocus={(e) => e.target.select()} spellCheck={false} />
          <button type="button" onClick={() => setCreated(undefined)}>
            Done, hide the secret
          </button>
        </div>
      )}
      {hooks.data && hooks.data.items.length === 0 && <p className="muted">No webhooks yet.</p>}
      <ul className="plain">
        {hooks.data?.items.map((h) => (
          <li key={h.id} className="card">
            <h2>
              <code>{h.url}</code>
            </h2>
            {/* Any text an admin gave: what would reverse or hide part of it shown as escapes, as names are (attack round 20, AA-F2). */}
            {h.description && <p>{visibleText(h.description)}</p>}
            <p className="muted">
              {h.types.includes('*') ? 'Every event type' : h.types.join(', ')} · since {formatTime(h.createdAt)} · secret{' '}
              {h.secretRotatedAt ? `last rotated ${formatTime(h.secretRotatedAt)}` : 'never rotated'} · {h.backlog.pending} pending
            </p>
            <Backlog backlog={h.backlog} />
            <div className="actions">
              <button type="button" aria-expanded={open === h.id} onClick={() => setOpen(open === h.id ? undefined : h.id)}>
                {open === h.id ? 'Hide deliveries' : 'Show deliveries'} to {h.url}
              </button>
              <button type="button" aria-expanded={rotating === h.id} onClick={() => setRotating(rotating === h.id ? undefined : h.id)}>
                Rotate the secret of {h.url}
              </button>
              <button type="button" className="danger" onClick={() => void remove(h.id, h.url)}>
                Delete webhook to {h.url}
              </button>
            </div>
            {rotating === h.id && (
              <RotateSecret
                id={h.id}
                url={h.url}
                rotatedAt={h.secretRotatedAt}
                onRotated={(secret, previousUntil) => {
                  setRotating(undefined);
                  setCreated({ url: h.url, secret, previousUntil });
                  hooks.reload();
                }}
                onStale={hooks.reload}
              />
            )}
            {open === h.id && <Deliveries id={h.id} />}
          </li>
        ))}
      </ul>
      <ShowMore list={hooks}>Show more webhooks</ShowMore>
      <NewWebhook
        onCreated={(url, secret) => {
          setCreated({ url, secret });
          hooks.reload();
        }}
      />
    </>
  );
}

/**
 * An endpoint at its cap of pending deliveries gets no new ones until half have drained: what it
 * missed stays in the audit log, and the admin needs to know from when to read it back.
 */
function Backlog({ backlog }: { backlog: Schemas['WebhookBacklogView'] }) {
  const missed =
    backlog.dropped > 0 && backlog.firstDroppedAt
      ? ` ${backlog.dropped === 1 ? '1 event was' : `${backlog.dropped} events were`} not delivered, from ${formatTime(backlog.firstDroppedAt)} to ${formatTime(backlog.lastDroppedAt)}: read them in the audit log.`
      : '';
  if (backlog.droppingSince) {
    return (
      <p className="warning">
        Not delivering new events since {formatTime(backlog.droppingSince)}: {backlog.pending} deliveries wait (at most {backlog.maxPending}); new ones are
        written again once half have drained.{missed}
      </p>
    );
  }
  return missed ? <p className="help warning">Earlier backlog:{missed}</p> : null;
}

/** How long deliveries keep the replaced secret's signature beside the new one (Standard Webhooks' rotation). */
const KEEP_PREVIOUS: [number, string][] = [
  [86_400, 'one day (the default)'],
  [3_600, 'one hour'],
  [604_800, 'seven days'],
  [0, 'no time: sign with the new secret only'],
];

/**
 * A new signing secret for a leaked or scheduled rotation; the old one keeps signing beside it for a
 * while. Only from the rotation this page shows (`ifSecretRotatedAt`): another admin's rotation since
 * is refused, not silently retired, and the page is read again.
 */
function RotateSecret({
  id,
  url,
  rotatedAt,
  onRotated,
  onStale,
}: {
  id: string;
  url: string;
  rotatedAt: string | null;
  onRotated(secret: string, previousUntil: string | null): void;
  onStale(): void;
}) {
  const { api } = useSession();
  const [keep, setKeep] = useState(KEEP_PREVIOUS[0][0]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setBusy(true);
    try {
      const rotated = await ok(
        api.POST('/api/v1/webhooks/{id}/rotate-secret', { params: { path: { id } }, body: { keepPreviousForSeconds: keep, ifSecretRotatedAt: rotatedAt } }),
      );
      onRotated(rotated.secret, rotated.previousSecretExpiresAt ?? null);
    } catch (err) {
      if (err instanceof ProblemError && err.problem.status === 409) {
        setError(`Someone rotated this secret meanwhile: ask them for it, or rotate again from theirs. (${messageOf(err)})`);
        onStale();
        return;
      }
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const field = `keep-previous-${id}`;
  return (
    <form onSubmit={submit} aria-label={`Rotate the secret of ${url}`} noValidate>
      <Alert>{error}</Alert>
      <div className="field">
        <label htmlFor={field}>Keep signing with the current secret for</label>
        <select id={field} value={keep} onChange={(e) => setKeep(Number(e.target.value))}>
          {KEEP_PREVIOUS.map(([seconds, label]) => (
            <option key={seconds} value={seconds}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Rotate the secret
        </button>
      </div>
    </form>
  );
}

function Deliveries({ id }: { id: string }) {
  const { api } = useSession();
  const deliveries = useLoad(() => ok(api.GET('/api/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } })), [api, id]);
  if (deliveries.error) return <Alert>{deliveries.error}</Alert>;
  if (!deliveries.data) return <p className="muted">Loading…</p>;
  if (deliveries.data.items.length === 0) return <p className="muted">Nothing delivered yet.</p>;
  return (
    <table>
      <caption>Latest deliveries</caption>
      <thead>
        <tr>
          <th scope="col">Event</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Last answer</th>
          <th scope="col">Next attempt</th>
        </tr>
      </thead>
      <tbody>
        {deliveries.data.items.map((d) => (
          <tr key={d.id}>
            <td>
              <code>{d.type}</code>
            </td>
            <td>{d.status}</td>
            <td>{d.attempts}</td>
            <td>{d.lastError ?? d.lastStatus ?? '—'}</td>
            <td>{d.status === 'pending' ? formatTime(d.nextAttemptAt) : formatTime(d.completedAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function NewWebhook({ onCreated }: { onCreated(url: string, secret: string): void }) {
  const { api } = useSession();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const map = errorMap(errors);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    try {
      const hook = await ok(api.POST('/api/v1/webhooks', { body: { url, types, ...(description ? { description } : {}) } }));
      setUrl('');
      setDescription('');
      setTypes([]);
      onCreated(hook.url, hook.secret);
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors) setErrors(err.problem.errors);
      setError(messageOf(err));
    }
  };
  const every = types.includes('*');
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-webhook-title" noValidate>
      <h2 id="new-webhook-title">New webhook</h2>
      <Alert>{error}</Alert>
      <div className="field">
        <label htmlFor={fieldId('url')}>URL</label>
        <input id={fieldId('url')} type="text" inputMode="url" value={url} onChange={(e) => setUrl(e.target.value)} {...fieldErrorProps(map, 'url')} />
        <FieldErrors errors={map} path="url" />
      </div>
      <div className="field">
        <label htmlFor={fieldId('description')}>Description</label>
        <input
          id={fieldId('description')}
          type="text"
          value={description}
          onChange={(e) => setDescription(e.target.value)}
          {...fieldErrorProps(map, 'description')}
        />
        <FieldErrors errors={map} path="description" />
      </div>
      <fieldset id={fieldId('types')} {...fieldErrorProps(map, 'types')}>
        <legend>Event types</legend>
        <div className="field--check">
          <input type="checkbox" id="type-all" checked={every} onChange={(e) => setTypes(e.target.checked ? ['*'] : [])} />
          <label htmlFor="type-all">Every type, also those a later release adds</label>
        </div>
        {AUDIT_EVENT_TYPES.map((t) => (
          <div key={t} className="field--check">
            <input
              type="checkbox"
              id={`type-${t}`}
              disabled={every}
              checked={every || types.includes(t)}
              onChange={(e) => setTypes(e.target.checked ? [...types, t] : types.filter((x) => x !== t))}
            />
            <label htmlFor={`type-${t}`}>{t}</label>
          </div>
        ))}
        <FieldErrors errors={map} path="types" />
      </fieldset>
      <div className="actions">
        <button type="submit" className="primary">
          Create webhook
        </button>
      </div>
    </form>
  );
}
