import { ok } from '../api/client';
import { Alert, useLoad } from '../components/feedback';
import { PageTitle } from '../router';
import { useSession } from '../session';

const LABELS: Record<string, string> = {
  knowledge: 'Knowledge documents (bytes)',
  collections: 'Knowledge collections',
  documents: 'Knowledge documents',
  agents: 'Agents (drafts and versions)',
  runs: 'Runs and tool calls',
  skills: 'Skills',
  api_keys: 'API keys (not revoked)',
  memories: 'Agent memories (bytes)',
};

const BYTE_UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];

/** Bytes in the largest unit that keeps the number at least 1, to one decimal: 10 GiB, 3.2 MiB. */
function formatBytes(n: number): string {
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(value < 10 && value % 1 !== 0 ? 1 : 0)} ${BYTE_UNITS[unit]}`;
}

/**
 * What the organization holds of each bound the deployment holds it to: an admin sees one coming
 * before a write is refused `409`. The bounds are the operator's settings (named), not the admin's.
 */
export function UsagePage() {
  const { api, me } = useSession();
  const orgId = me.orgId!;
  const usage = useLoad(() => ok(api.GET('/api/v1/orgs/{orgId}/usage', { params: { path: { orgId } } })), [api, orgId]);
  return (
    <>
      <PageTitle>Usage</PageTitle>
      <p className="muted">Past a bound, new writes of that kind are refused until some are removed or the operator raises the setting named.</p>
      <Alert>{usage.error}</Alert>
      {!usage.data && !usage.error && <p className="muted">Loading…</p>}
      {usage.data && (
        <table>
          <caption className="visually-hidden">What the organization holds of each bound</caption>
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Used</th>
              <th scope="col">Bound</th>
              <th scope="col">Share</th>
              <th scope="col">Setting</th>
            </tr>
          </thead>
          <tbody>
            {usage.data.items.map((m) => {
              const label = LABELS[m.meter] ?? m.meter;
              const format = (n: number) => (m.unit === 'bytes' ? formatBytes(n) : n.toLocaleString('en'));
              const share = m.limit > 0 ? Math.min(100, (m.used / m.limit) * 100) : 0;
              return (
                <tr key={m.meter}>
                  <th scope="row">{label}</th>
                  <td>{format(m.used)}</td>
                  <td>{format(m.limit)}</td>
                  <td>
                    <meter
                      min={0}
                      max={m.limit}
                      low={m.limit * 0.8}
                      high={m.limit * 0.95}
                      optimum={0}
                      value={Math.min(m.used, m.limit)}
                      aria-label={`${label}: ${share.toFixed(0)}% used`}
                    />{' '}
                    {share.toFixed(share > 0 && share < 1 ? 1 : 0)}%
                  </td>
                  <td>
                    <code>{m.setting}</code>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
