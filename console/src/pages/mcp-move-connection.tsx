import { useState, type FormEvent } from 'react';
import { visibleText } from '../components/feedback';
import type { Schemas } from '../api/client';

type Entry = Schemas['McpServerEntryView'];
type Connection = Schemas['McpConnectionView'];

/** The origin (scheme, host, port) of a URL, or undefined while it is not one. */
function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * A server's new address (a vendor's new endpoint): its tools are listed there before anything
 * changes, so a wrong one changes nothing. Stored credentials go only to the origin they were given
 * for: moving a connection that holds some to another origin takes them again (the API refuses the
 * move without), so the form asks for them, empty fields meaning none.
 */
export function MoveConnection({
  connection: c,
  entry,
  busy,
  onMove,
}: {
  connection: Connection;
  entry: Entry | undefined;
  busy: boolean;
  onMove(url: string, credentials?: Record<string, string>): Promise<boolean>;
}) {
  const [url, setUrl] = useState('');
  const [credentials, setCredentials] = useState<Record<string, string>>({});
  const id = `move-${c.id}`;
  const target = originOf(url);
  const elsewhere = c.credentialNames.length > 0 && target !== undefined && target !== originOf(c.url ?? '');
  const fields = entry?.credentials.map((f) => f.name) ?? c.credentialNames;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const given = elsewhere ? Object.fromEntries(Object.entries(credentials).filter(([k, v]) => v !== '' && fields.includes(k))) : undefined;
    if (await onMove(url, given)) {
      setUrl('');
      setCredentials({});
    }
  };
  return (
    <form className="actions" aria-label={`Move ${visibleText(c.name)}`} onSubmit={(e) => void submit(e)}>
      <label htmlFor={id}>New URL of {c.name}</label>
      <input id={id} type="url" required maxLength={2048} value={url} onChange={(e) => setUrl(e.target.value)} />
      {elsewhere && (
        <fieldset>
          <legend>Credentials for {target}</legend>
          <p className="help">
            The stored credentials ({c.credentialNames.join(', ')}) are sent only to {originOf(c.url ?? '')}, where they were given. Give them for the new
            address; a field left empty moves the connection without it.
          </p>
          {fields.map((name) => (
            <div className="field" key={name}>
              <label htmlFor={`${id}-${name}`}>
                {name} at the new URL of {c.name}
              </label>
              <input
                id={`${id}-${name}`}
                type="password"
                autoComplete="off"
                value={credentials[name] ?? ''}
                onChange={(e) => setCredentials({ ...credentials, [name]: e.target.value })}
              />
            </div>
          ))}
        </fieldset>
      )}
      <button type="submit" disabled={busy || url === ''}>
        Move {visibleText(c.name)}
      </button>
    </form>
  );
}
