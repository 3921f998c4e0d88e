import { useState } from 'react';
import { messageOf, ok } from '../api/client';
import { PrincipalName, usePrincipalNames } from '../components/actor';
import { Alert, formatTime, JsonView, ShowMore, Status, useLoad, usePages, visibleText } from '../components/feedback';
import { can, useSession } from '../session';

/**
 * Published versions, newest first: each with its drift and whether it was retired, and for the one
 * chosen its offered tools and system prompt. A builder retires an older version (its calls are
 * refused from then on); the latest cannot be retired.
 */
export function VersionsPanel({ agentId }: { agentId: string }) {
  const { api, me } = useSession();
  const builder = can(me, 'build');
  // Every page, older ones on request: a version past the first page (200, newest first) was never shown, nor could it be retired here.
  const versions = usePages(
    (cursor) => ok(api.GET('/api/v1/agents/{agentId}/versions', { params: { path: { agentId }, query: { limit: 200, ...(cursor ? { cursor } : {}) } } })),
    [api, agentId],
  );
  const [chosen, setChosen] = useState<number>();
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const [retiring, setRetiring] = useState<number>();
  const names = usePrincipalNames(versions.data?.items.map((v) => v.publishedBy) ?? []);
  if (versions.error) return <Alert>{versions.error}</Alert>;
  if (!versions.data) return <p className="muted">Loading…</p>;
  const items = versions.data.items;
  if (items.length === 0) return <p className="muted">Not published yet: publish the draft to make a version.</p>;
  const selected = chosen ?? items[0].version;
  // Newest first: the first page holds the latest.
  const latest = items[0].version;

  const retire = async (version: number) => {
    if (
      !window.confirm(
        `Retire version ${version}? Every call to it, at every entry point (tool calls, MCP, runs, approvals being granted), is refused 409 version_retired from then on, and nothing runs. A version cannot be brought back.`,
      )
    )
      return;
    setError(undefined);
    setStatus(undefined);
    setRetiring(version);
    try {
      await ok(api.POST('/api/v1/agents/{agentId}/versions/{version}/retire', { params: { path: { agentId, version } } }));
      setStatus(`Retired version ${version}: its calls are refused 409 version_retired.`);
      versions.reload();
    } catch (err) {
      setError(`Version ${version} was not retired: ${messageOf(err)}`);
    } finally {
      setRetiring(undefined);
    }
  };

  return (
    <>
      <Alert>{error}</Alert>
      <Status>{status}</Status>
      <table>
        <caption className="visually-hidden">Published versions</caption>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Published</th>
            <th scope="col">By</th>
            <th scope="col">Drift</th>
            <th scope="col">Retired</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.map((v) => (
            <tr key={v.version} aria-current={v.version === selected ? 'true' : undefined}>
              <td>{v.version}</td>
              <td>{formatTime(v.publishedAt)}</td>
              <td>
                <PrincipalName id={v.publishedBy} names={names} />
              </td>
              <td>
                {v.drift.length === 0 ? (
                  'none'
                ) : (
                  <ul className="drift">
                    {v.drift.map((d) => (
                      <li key={`${d.tool} ${d.toolId ?? ''}`}>
                        <code>{visibleText(d.tool)}</code>: {d.reason}
                        {d.toolId && (
                          <>
                            {' '}
                            (from <code>{visibleText(d.toolId)}</code>, not offered: the name stays with the tool it was pinned from)
                          </>
                        )}
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>{v.retiredAt ? `Retired ${formatTime(v.retiredAt)}` : 'no'}</td>
              <td>
                <div className="actions">
                  <button type="button" onClick={() => setChosen(v.version)} disabled={v.version === selected}>
                    Show version {v.version}
                  </button>
                  {builder && !v.retiredAt && v.version !== latest && (
                    <button type="button" className="danger" disabled={retiring !== undefined} onClick={() => void retire(v.version)}>
                      Retire version {v.version}
                    </button>
                  )}
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShowMore list={versions}>Show older versions</ShowMore>
      <VersionDetail
        key={selected}
        agentId={agentId}
        version={selected}
        drift={items.find((v) => v.version === selected)?.drift ?? []}
        retiredAt={items.find((v) => v.version === selected)?.retiredAt ?? null}
      />
    </>
  );
}

function VersionDetail({
  agentId,
  version,
  drift,
  retiredAt,
}: {
  agentId: string;
  version: number;
  drift: { tool: string; reason: string }[];
  retiredAt: string | null;
}) {
  const { api } = useSession();
  const manifest = useLoad(
    () => ok(api.GET('/api/v1/agents/{agentId}/versions/{version}/manifest', { params: { path: { agentId, version } } })),
    [api, agentId, version],
  );
  return (
    <section aria-labelledby="version-title" className="card">
      <h2 id="version-title">Version {version}</h2>
      {retiredAt && (
        <p className="warning">
          Retired {formatTime(retiredAt)}: every call to this version is refused <code>409 version_retired</code>.
        </p>
      )}
      {drift.length > 0 && (
        <p className="warning">
          The code changed {drift.length === 1 ? 'a tool' : `${drift.length} tools`} since this version was published; calls to{' '}
          {drift.length === 1 ? 'it' : 'them'} are refused until the agent is published again.
        </p>
      )}
      <Alert>{manifest.error}</Alert>
      {manifest.data && (
        <>
          <h3>Offered tools</h3>
          {manifest.data.tools.length === 0 ? (
            <p className="muted">This version offers no tools.</p>
          ) : (
            <table>
              <caption className="visually-hidden">Tools offered to the model</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Risk</th>
                  <th scope="col">Approval</th>
                  <th scope="col">Description</th>
                </tr>
              </thead>
              <tbody>
                {manifest.data.tools.map((t) => (
                  <tr key={t.name}>
                    <td>
                      <code>{visibleText(t.name)}</code>
                    </td>
                    <td>
                      <code>{visibleText(`${t.capabilityId}/${t.toolId}`)}</code>
                    </td>
                    <td>
                      <span className={`risk risk--${t.risk}`}>{t.risk.replace('_', ' ')}</span>
                    </td>
                    <td>{t.requiresApproval ? 'required' : 'no'}</td>
                    <td>{visibleText(t.description)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>System prompt</h3>
          {/* What the model reads, with what a person cannot see escaped: tag characters are read by models, drawn as nothing. */}
          <pre className="prompt" role="region" aria-label={`System prompt of version ${version}`} tabIndex={0}>
            {visibleText(manifest.data.systemPrompt)}
          </pre>
          {Object.keys(manifest.data.settings).length > 0 && (
            <>
              <h3>Settings</h3>
              <JsonView label={`Settings of version ${version}`} value={manifest.data.settings} />
            </>
          )}
        </>
      )}
    </section>
  );
}
