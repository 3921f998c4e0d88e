import { useCallback, useMemo, useState, type FormEvent } from 'react';
import { createApi, messageOf, ok } from './api/client';
import { Actor } from './components/actor';
import { Alert, formatTime } from './components/feedback';
import { AgentEditor } from './pages/agent-editor';
import { AgentsPage } from './pages/agents';
import { ApiKeysPage } from './pages/api-keys';
import { ApprovalsPage } from './pages/approvals';
import { AuditLogPage } from './pages/audit-log';
import { CapabilitiesPage } from './pages/capabilities';
import { KnowledgePage } from './pages/knowledge';
import { McpServersPage } from './pages/mcp-servers';
import { ModelProvidersPage } from './pages/model-providers';
import { canReadRuns, RunPage, RunsPage } from './pages/runs';
import { ToolSwitchesPage } from './pages/tool-switches';
import { UsagePage } from './pages/usage';
import { WebhooksPage } from './pages/webhooks';
import { SkillsPage } from './pages/skills';
import { Link, match, PageTitle, Redirect, usePath } from './router';
import { can, SessionContext, type Me, type Session } from './session';

export function App() {
  const [session, setSession] = useState<{ token: string; me: Me } | null>(null);
  const [notice, setNotice] = useState<string>();
  const signOut = useCallback((reason?: string) => {
    setSession(null);
    setNotice(reason);
  }, []);
  const value = useMemo<Session | null>(() => {
    if (!session) return null;
    return {
      token: session.token,
      me: session.me,
      api: createApi(session.token, () => signOut('The server no longer accepts this API key. Sign in again.')),
      signOut,
    };
  }, [session, signOut]);

  if (!value) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(token, me) => {
          setNotice(undefined);
          setSession({ token, me });
        }}
      />
    );
  }
  return (
    <SessionContext.Provider value={value}>
      <Shell session={value} />
    </SessionContext.Provider>
  );
}

function SignIn({ notice, onSignedIn }: { notice?: string; onSignedIn(token: string, me: Me): void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    const key = token.trim();
    if (!key) return setError('Enter an API key.');
    setBusy(true);
    try {
      const me = await ok(createApi(key, () => undefined).GET('/api/v1/me'));
      if (me.type === 'platform') {
        setError('This is the platform admin token: it manages organizations, not their agents. Sign in with an API key of an organization.');
        return;
      }
      setToken('');
      onSignedIn(key, me);
    } catch (err) {
      setError(`Sign-in failed: ${messageOf(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <PageTitle>Sign in to the Builder console</PageTitle>
      <p>Your API key stays in this tab only: it is forgotten when you sign out, reload or close the tab.</p>
      {notice && <Alert>{notice}</Alert>}
      <Alert>{error}</Alert>
      {/* The form posts nowhere: a key must never end up in a URL, even if a script fails to load. */}
      <form onSubmit={submit} method="post" action="#" autoComplete="off">
        <div className="field">
          <label htmlFor="api-key">API key</label>
          <input id="api-key" type="password" value={token} onChange={(e) => setToken(e.target.value)} autoComplete="off" spellCheck={false} />
        </div>
        <button type="submit" className="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

interface NavItem {
  to: string;
  label: string;
  show: boolean;
}

/**
 * A key that stops working within a week, said where its holder looks: the organization is told
 * too (`api_key.expiring`), but the person using the console may not be its admin. An identity
 * provider's token is not: it expires within the hour and signing in again renews it.
 */
const EXPIRY_NOTICE_MS = 7 * 86_400_000;
function expiresSoon(me: Me): boolean {
  return me.type === 'api_key' && me.expiresAt !== undefined && Date.parse(me.expiresAt) - Date.now() < EXPIRY_NOTICE_MS;
}

function Shell({ session }: { session: Session }) {
  const path = usePath();
  const { me } = session;
  const nav: NavItem[] = [
    { to: '/agents', label: 'Agents', show: can(me, 'read') },
    { to: '/capabilities', label: 'Capabilities', show: true },
    { to: '/runs', label: 'Runs', show: canReadRuns(me) },
    { to: '/approvals', label: 'Approvals', show: can(me, 'read') },
    { to: '/mcp-servers', label: 'MCP servers', show: can(me, 'read') },
    { to: '/model-providers', label: 'Model providers', show: can(me, 'read') },
    { to: '/knowledge', label: 'Knowledge', show: can(me, 'read') },
    { to: '/skills', label: 'Skills', show: can(me, 'read') },
    { to: '/tool-switches', label: 'Tool switches', show: can(me, 'read') },
    { to: '/audit-log', label: 'Audit log', show: can(me, 'admin') },
    { to: '/api-keys', label: 'API keys', show: can(me, 'admin') },
    { to: '/webhooks', label: 'Webhooks', show: can(me, 'admin') },
    { to: '/usage', label: 'Usage', show: can(me, 'admin') },
  ];
  const visible = nav.filter((n) => n.show);
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Builder console</span>
        <span className="who">
          <Actor type={me.type} id={me.id} label={me.type === 'oidc' ? 'Signed in as' : 'Key'} /> · {(me.roles ?? []).join(', ')}
        </span>
        {expiresSoon(me) ? (
          <span className="warning" role="status">
            This key expires {formatTime(me.expiresAt)}: ask an admin for another.
          </span>
        ) : null}
        <button type="button" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <div className="layout">
        <nav aria-label="Main">
          <ul>
            {visible.map((n) => (
              <li key={n.to}>
                <Link to={n.to} aria-current={path === n.to || path.startsWith(n.to + '/') ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main">
          <Page path={path} session={session} first={visible[0]?.to} />
        </main>
      </div>
    </>
  );
}

function Page({ path, session, first }: { path: string; session: Session; first?: string }) {
  const { me } = session;
  let params: Record<string, string> | null;
  if (path === '/' || path === '') {
    if (first) return <Redirect to={first} />;
    return <PageTitle>Builder console</PageTitle>;
  }
  if (match('/agents', path) && can(me, 'read')) return <AgentsPage />;
  if ((params = match('/agents/:id', path)) && can(me, 'read')) return <AgentEditor agentId={params.id} tab="draft" />;
  if ((params = match('/agents/:id/versions', path)) && can(me, 'read')) return <AgentEditor agentId={params.id} tab="versions" />;
  if (match('/capabilities', path)) return <CapabilitiesPage />;
  if (match('/runs', path) && canReadRuns(me)) return <RunsPage />;
  if ((params = match('/runs/:id', path)) && canReadRuns(me)) return <RunPage runId={params.id} />;
  if (match('/approvals', path) && can(me, 'read')) return <ApprovalsPage />;
  if (match('/knowledge', path) && can(me, 'read')) return <KnowledgePage />;
  if ((params = match('/knowledge/:id', path)) && can(me, 'read')) return <KnowledgePage collectionId={params.id} />;
  if (match('/skills', path) && can(me, 'read')) return <SkillsPage />;
  if (match('/mcp-servers', path) && can(me, 'read')) return <McpServersPage />;
  if (match('/tool-switches', path) && can(me, 'read')) return <ToolSwitchesPage />;
  if (match('/model-providers', path) && can(me, 'read')) return <ModelProvidersPage />;
  if (match('/webhooks', path) && can(me, 'admin')) return <WebhooksPage />;
  if (match('/audit-log', path) && can(me, 'admin')) return <AuditLogPage />;
  if (match('/api-keys', path) && can(me, 'admin')) return <ApiKeysPage />;
  if (match('/usage', path) && can(me, 'admin')) return <UsagePage />;
  return (
    <>
      <PageTitle>Not found</PageTitle>
      <p>
        Nothing here for this key. <Link to="/">Go to the start</Link>.
      </p>
    </>
  );
}
