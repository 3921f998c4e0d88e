import { useEffect, useRef, useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { readEventStream, type AuditEventMessage } from '../events';
import { Alert, errorMap, FieldErrors, fieldErrorProps, fieldId, formatTime, ShowMore, Status, useLoad, usePages, visibleText } from '../components/feedback';
import { Link, navigate, PageTitle } from '../router';
import type { Me } from '../session';
import { useSession } from '../session';

type Run = Schemas['RunView'];

const STATUS_TEXT: Record<Run['status'], string> = {
  running: 'running',
  waiting_for_approval: 'waiting for approval',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** API.md "Models and runs": agent and builder keys start and cancel runs; viewer and agent keys read them. */
export function canStartRuns(me: Me): boolean {
  const roles = new Set(me.roles ?? []);
  return roles.has('admin') || roles.has('builder') || roles.has('agent');
}

export function canReadRuns(me: Me): boolean {
  const roles = new Set(me.roles ?? []);
  return roles.has('admin') || roles.has('viewer') || roles.has('builder') || roles.has('approver') || roles.has('agent');
}

export function RunsPage() {
  const { api, me } = useSession();
  const runs = usePages((cursor) => ok(api.GET('/api/v1/runs', { params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } } })), [api]);
  return (
    <>
      <PageTitle>Runs</PageTitle>
      {canStartRuns(me) && <StartRunForm />}
      <section aria-labelledby="runs-title">
        <h2 id="runs-title">Recent runs</h2>
        <button type="button" onClick={runs.reload}>
          Refresh
        </button>
        <Alert>{runs.error && `The runs could not be loaded: ${runs.error}`}</Alert>
        {runs.data &&
          (runs.data.items.length === 0 ? (
            <p className="muted">No runs yet.</p>
          ) : (
            <table>
              <caption className="visually-hidden">Runs of this organization, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Input</th>
                  <th scope="col">Version</th>
                  <th scope="col">Started</th>
                </tr>
              </thead>
              <tbody>
                {runs.data.items.map((r) => (
                  <tr key={r.id}>
                    <td>
                      <Link to={`/runs/${r.id}`}>
                        <code>{r.id.slice(0, 8)}</code>
                      </Link>
                    </td>
                    <td>{STATUS_TEXT[r.status]}</td>
                    <td>{visibleText(r.input.length > 80 ? `${r.input.slice(0, 80)}…` : r.input)}</td>
                    <td>{r.version}</td>
                    <td>{formatTime(r.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ))}
        <ShowMore list={runs}>Show older runs</ShowMore>
      </section>
    </>
  );
}

function StartRunForm() {
  const { api } = useSession();
  const agents = useLoad(() => ok(api.GET('/api/v1/agents', { params: { query: { limit: 200 } } })), [api]);
  const [agentId, setAgentId] = useState('');
  const [input, setInput] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const map = errorMap(errors);
  const published = (agents.data?.items ?? []).filter((a) => a.latestVersion);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    if (!agentId) return setErrors([{ path: 'agentId', message: 'Choose an agent.' }]);
    setBusy(true);
    try {
      const run = await ok(api.POST('/api/v1/agents/{agentId}/runs', { params: { path: { agentId } }, body: { input } }));
      navigate(`/runs/${run.id}`);
    } catch (err) {
      if (err instanceof ProblemError) {
        setErrors(err.problem.errors ?? []);
        setError(err.problem.detail);
      } else setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="start-run-title">
      <h2 id="start-run-title">Start a run</h2>
      <Alert>{error}</Alert>
      <Alert>{agents.error && `The agents could not be loaded: ${agents.error}`}</Alert>
      <div className="field">
        <label htmlFor={fieldId('agentId')}>Agent</label>
        <select id={fieldId('agentId')} value={agentId} onChange={(e) => setAgentId(e.target.value)} {...fieldErrorProps(map, 'agentId')}>
          <option value="">Choose a published agent</option>
          {published.map((a) => (
            <option key={a.id} value={a.id}>
              {visibleText(a.name)} (version {a.latestVersion})
            </option>
          ))}
        </select>
        <FieldErrors errors={map} path="agentId" />
      </div>
      <div className="field">
        <label htmlFor={fieldId('input')}>Input</label>
        <textarea id={fieldId('input')} rows={4} value={input} onChange={(e) => setInput(e.target.value)} {...fieldErrorProps(map, 'input')} />
        <FieldErrors errors={map} path="input" />
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Start run
        </button>
      </div>
    </form>
  );
}

interface TranscriptEntry {
  id: string;
  type: string;
  detail?: string;
}

/** One line a person can read for an event of the run's stream; the raw data stays one click away. */
function describe(e: AuditEventMessage): string | undefined {
  let data: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(e.data);
    if (parsed && typeof parsed === 'object') data = parsed as Record<string, unknown>;
  } catch {
    return e.data;
  }
  const pick = (...keys: string[]) => keys.map((k) => data[k]).find((v) => typeof v === 'string') as string | undefined;
  const detail = pick('output', 'content', 'tool', 'name', 'message', 'reason');
  return detail;
}

export function RunPage({ runId }: { runId: string }) {
  const { api, me, token } = useSession();
  const run = useLoad(() => ok(api.GET('/api/v1/runs/{id}', { params: { path: { id: runId } } })), [api, runId]);
  const [events, setEvents] = useState<TranscriptEntry[]>([]);
  const [streamState, setStreamState] = useState<'connecting' | 'live' | 'ended' | 'failed'>('connecting');
  const [failure, setFailure] = useState<string>();
  const [status, setStatus] = useState<string>();
  const reload = useRef(run.reload);
  reload.current = run.reload;

  useEffect(() => {
    const abort = new AbortController();
    const lastId: { current?: string } = {};
    setEvents([]);
    setStreamState('connecting');
    void (async () => {
      // The stream ends after the run's last event; a dropped one resumes from Last-Event-ID.
      for (let attempt = 0; attempt < 5 && !abort.signal.aborted; attempt++) {
        try {
          const offered = await readEventStream(
            `/api/v1/runs/${encodeURIComponent(runId)}/events`,
            token,
            lastId,
            abort.signal,
            (e) => {
              setEvents((list) => [...list, { id: e.id, type: e.type, detail: describe(e) }]);
              // The run's status, pending approvals and output are read from the run itself.
              reload.current();
            },
            () => setStreamState('live'),
          );
          if (!offered) return setStreamState('failed');
          setStreamState('ended');
          return;
        } catch {
          if (abort.signal.aborted) return;
          await new Promise((resolve) => setTimeout(resolve, 2000));
        }
      }
      if (!abort.signal.aborted) setStreamState('failed');
    })();
    return () => abort.abort();
  }, [runId, token]);

  const cancel = async () => {
    setFailure(undefined);
    try {
      await ok(api.POST('/api/v1/runs/{id}/cancel', { params: { path: { id: runId } } }));
      setStatus('Run cancelled.');
      run.reload();
    } catch (err) {
      setFailure(`The run could not be cancelled: ${messageOf(err)}`);
    }
  };

  const r = run.data;
  return (
    <>
      <PageTitle>{`Run ${runId.slice(0, 8)}`}</PageTitle>
      <p>
        <Link to="/runs">All runs</Link>
      </p>
      <Alert>{run.error}</Alert>
      <Alert>{failure}</Alert>
      <Alert>{streamState === 'failed' && 'The run’s event stream is not available; the run below is as last read.'}</Alert>
      {r && (
        <div className="card">
          <dl>
            <dt>Status</dt>
            <dd>{STATUS_TEXT[r.status]}</dd>
            <dt>Agent</dt>
            <dd>
              <Link to={`/agents/${r.agentId}`}>{r.agentId}</Link> · version {r.version}
            </dd>
            {/* What a model wrote (or was given) with what people cannot see escaped: tag characters are read by the next model, drawn as nothing. */}
            <dt>Input</dt>
            <dd className="pre">{visibleText(r.input)}</dd>
            {r.output !== undefined && (
              <>
                <dt>Output</dt>
                <dd className="pre">{visibleText(r.output)}</dd>
              </>
            )}
            <dt>Usage</dt>
            <dd>
              {r.usage.modelCalls} model calls, {r.usage.toolCalls} tool calls, {r.usage.inputTokens} input and {r.usage.outputTokens} output tokens
            </dd>
          </dl>
          {r.error && (
            <p className="warning">
              Failed: <code>{r.error.code}</code> {visibleText(r.error.message)}
            </p>
          )}
          {r.status === 'waiting_for_approval' && (
            <div className="warning">
              <p>The run waits for {r.pendingApprovalIds.length === 1 ? 'an approval' : `${r.pendingApprovalIds.length} approvals`}:</p>
              <ul>
                {r.pendingApprovalIds.map((id) => (
                  <li key={id}>
                    <Link to="/approvals">
                      Approval <code>{id.slice(0, 8)}</code> in the approvals inbox
                    </Link>
                  </li>
                ))}
              </ul>
            </div>
          )}
          {canStartRuns(me) && (r.status === 'running' || r.status === 'waiting_for_approval') && (
            <button type="button" onClick={() => void cancel()}>
              Cancel run
            </button>
          )}
        </div>
      )}
      <section aria-labelledby="transcript-title">
        <h2 id="transcript-title">Transcript</h2>
        <p className="muted">
          {streamState === 'live'
            ? 'Live: new events appear as they happen.'
            : streamState === 'ended'
              ? 'The run has finished: the transcript is complete.'
              : streamState === 'connecting'
                ? 'Connecting…'
                : ''}
        </p>
        {events.length === 0 ? (
          <p className="muted">No events yet.</p>
        ) : (
          <ol className="transcript" aria-live="polite" aria-relevant="additions">
            {events.map((e, i) => (
              <li key={`${e.id}-${i}`}>
                <code>{e.type}</code> {e.detail && visibleText(e.detail)}
              </li>
            ))}
          </ol>
        )}
      </section>
      <Status>{status}</Status>
    </>
  );
}
