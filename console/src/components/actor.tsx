/**
 * Who acted, as the API names it (`{ type, id }`). A key (or anything else with a random UUID) by
 * the first 8 characters of its id: enough to tell keys apart, and the title holds the rest. A
 * person signed in through the identity provider by the whole subject, wrapped where it must be
 * and with its spaces kept: subjects of one provider share long prefixes (every Auth0 user's starts
 * `auth0|`), so any cut showed two people as one.
 */
export function Actor({ type, id, label = type }: { type: string; id: string; label?: string }) {
  return (
    <>
      {label} {type === 'oidc' ? <code className="subject">{id}</code> : <ShortId id={id} />}
    </>
  );
}

/** A random id, shortened; the title (a tooltip) holds it whole. */
export function ShortId({ id }: { id: string }) {
  return <code title={id}>{id.slice(0, 8)}</code>;
}
