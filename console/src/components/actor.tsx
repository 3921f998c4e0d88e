import { ok, Schemas } from '../api/client';
import { useSession } from '../session';
import { useLoad } from './feedback';

/**
 * Who acted, as the API names it (`{ type, id }`). A key (or anything else with a random UUID) by
 * the first 8 characters of its id: enough to tell keys apart, and the title holds the rest. A
 * person signed in through the identity provider by the whole subject, wrapped where it must be
 * and with its spaces kept: subjects of one provider share long prefixes (every Auth0 user's starts
 * `auth0|`), so any cut showed two people as one.
 */
export function Actor({ type, id, label = type, names }: { type: string; id: string; label?: string; names?: ReadonlyMap<string, Principal> }) {
  const key = type === 'api_key' ? names?.get(id) : undefined;
  return (
    <>
      {label} {type === 'oidc' ? <code className="subject">{id}</code> : key ? <KeyName id={id} principal={key} /> : <ShortId id={id} />}
    </>
  );
}

/** A random id, shortened; the title (a tooltip) holds it whole. */
export function ShortId({ id }: { id: string }) {
  return <code title={id}>{id.slice(0, 8)}</code>;
}

type Principal = Schemas['PrincipalView'];
const NO_NAMES: ReadonlyMap<string, Principal> = new Map();
/** The most ids `GET /principals` names at once. */
const IDS_PER_REQUEST = 100;

/**
 * What the organization calls the keys and people a page names by id (`requestedBy`, `decidedBy`,
 * `publishedBy`), read once per set of ids. Until it answers, or if it cannot (a role that may not
 * read names), the ids are shown as they are.
 */
export function usePrincipalNames(ids: readonly (string | null | undefined)[]): ReadonlyMap<string, Principal> {
  const { api } = useSession();
  const key = [...new Set(ids.filter((id): id is string => !!id))].sort().join(',');
  const loaded = useLoad(async () => {
    const names = new Map<string, Principal>();
    const wanted = key ? key.split(',') : [];
    for (let i = 0; i < wanted.length; i += IDS_PER_REQUEST) {
      const page = await ok(api.GET('/api/v1/principals', { params: { query: { ids: wanted.slice(i, i + IDS_PER_REQUEST).join(',') } } }));
      for (const p of page.items) names.set(p.id, p);
    }
    return names;
  }, [api, key]);
  return loaded.data ?? NO_NAMES;
}

/** Control and format characters (a bidi override, a line break) as `\uXXXX`: a key named before names were checked could hold them. */
const UNSEEN = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const visible = (text: string) => text.replace(UNSEEN, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);

/** An id named by `usePrincipalNames`: a key by its name, a person by their subject; an id it does not know, shortened. */
export function PrincipalName({ id, names }: { id: string; names: ReadonlyMap<string, Principal> }) {
  const p = names.get(id);
  if (!p) return <ShortId id={id} />;
  if (p.type === 'oidc') {
    return (
      <code className="subject" title={id}>
        {visible(p.name)}
      </code>
    );
  }
  return <KeyName id={id} principal={p} />;
}

function KeyName({ id, principal }: { id: string; principal: Principal }) {
  return (
    <span title={id}>
      {visible(principal.name)}
      {principal.revokedAt ? ' (revoked key)' : principal.expiresAt && Date.parse(principal.expiresAt) <= Date.now() ? ' (expired key)' : ' (key)'}
    </span>
  );
}
