import { useEffect, useMemo, useState } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import {
  Alert,
  ErrorSummary,
  errorMap,
  errorId,
  FieldErrors,
  fieldId,
  ShowMore,
  Status,
  useLoad,
  usePages,
  visibleText,
  type ErrorMap,
  type Paged,
} from '../components/feedback';
import { MarkdownEditor } from '../components/markdown';
import { SchemaForm, type JsonSchema } from '../components/schema-form';
import { Link, PageTitle } from '../router';
import { can, useSession } from '../session';
import { ModelSection } from './model-section';
import { VersionsPanel } from './versions';

type AgentSpec = Schemas['AgentSpecDto'];
type Capability = Schemas['CapabilityDescriptorView'];
type Agent = Schemas['AgentView'];

export function AgentEditor({ agentId, tab }: { agentId: string; tab: 'draft' | 'versions' }) {
  const { api } = useSession();
  const agent = useLoad(() => ok(api.GET('/api/v1/agents/{agentId}', { params: { path: { agentId } } })), [api, agentId]);
  if (agent.error) return <Alert>{agent.error}</Alert>;
  if (!agent.data) return <p className="muted">Loading…</p>;
  const a = agent.data;
  return (
    <>
      <PageTitle>{visibleText(a.name)}</PageTitle>
      <p className="muted">
        <code>{a.slug}</code> · {a.latestVersion ? `latest version ${a.latestVersion}` : 'never published'}
        {a.description ? ` · ${a.description}` : ''}
      </p>
      <nav aria-label="Agent" className="tabs">
        <Link to={`/agents/${a.id}`} aria-current={tab === 'draft' ? 'page' : undefined}>
          Draft
        </Link>
        <Link to={`/agents/${a.id}/versions`} aria-current={tab === 'versions' ? 'page' : undefined}>
          Versions
        </Link>
      </nav>
      {tab === 'draft' ? <DraftEditor key={a.id} agent={a} onPublished={agent.reload} /> : <VersionsPanel agentId={a.id} />}
    </>
  );
}

/** The draft as the API stores it, with empty parts dropped and parts this editor does not draw kept. */
function cleanSpec(spec: AgentSpec): AgentSpec {
  const out: AgentSpec = {
    ...spec,
    capabilities: spec.capabilities.map((c) => (c.config && Object.keys(c.config).length > 0 ? { id: c.id, config: c.config } : { id: c.id })),
  };
  const resources = Object.fromEntries(Object.entries(spec.resources ?? {}).filter(([, ids]) => ids && ids.length > 0));
  if (Object.keys(resources).length) out.resources = resources;
  else delete out.resources;
  if (spec.mcpServers?.length) out.mcpServers = spec.mcpServers;
  else delete out.mcpServers;
  if (spec.toolApproval && Object.keys(spec.toolApproval).length) out.toolApproval = spec.toolApproval;
  else delete out.toolApproval;
  const overrides = Object.fromEntries(
    Object.entries(spec.toolOverrides ?? {})
      .map(([tool, o]) => [tool, Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v === 'string' && v !== ''))] as const)
      .filter(([, o]) => Object.keys(o).length > 0),
  );
  if (Object.keys(overrides).length) out.toolOverrides = overrides;
  else delete out.toolOverrides;
  return out;
}

function DraftEditor({ agent, onPublished }: { agent: Agent; onPublished(): void }) {
  const { api, me } = useSession();
  const readOnly = !can(me, 'build');
  const [spec, setSpec] = useState<AgentSpec>(() => agent.draft as AgentSpec);
  const [dirty, setDirty] = useState(false);
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [summary, setSummary] = useState('');
  const [status, setStatus] = useState<string>();
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  const catalog = useLoad(() => ok(api.GET('/api/v1/agents/capabilities')), [api]);
  const org = useLoad(() => ok(api.GET('/api/v1/orgs/{orgId}', { params: { path: { orgId: me.orgId! } } })), [api, me.orgId]);
  // Page after page on request: a page ends at 200 items or about 4 MiB (a few connections of
  // large tool lists), and what a draft binds past the first one is no less there.
  const collections = usePages(
    (cursor) => ok(api.GET('/api/v1/knowledge/collections', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })),
    [api],
  );
  // Names and descriptions only: a page of whole skills was up to 4 MiB of instructions the editor never shows.
  const skills = usePages(
    async (cursor) =>
      (await ok(api.GET('/api/v1/skills', { params: { query: { view: 'basic', limit: 200, ...(cursor ? { cursor } : {}) } } }))) as {
        items: Schemas['SkillBasicView'][];
        nextCursor: string | null;
      },
    [api],
  );
  const connections = usePages((cursor) => ok(api.GET('/api/v1/mcp-connections', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const map = useMemo(() => errorMap(errors), [errors]);
  const byId = useMemo(() => new Map((catalog.data?.items ?? []).map((c) => [c.id, c])), [catalog.data]);

  const edit = (next: AgentSpec) => {
    setSpec(next);
    setDirty(true);
    setStatus(undefined);
  };

  const toggle = (cap: Capability, on: boolean) => {
    if (on) return edit({ ...spec, capabilities: [...spec.capabilities, { id: cap.id }] });
    // Approvals and overrides of the tools it offered would name tools no longer attached.
    const toolIds = new Set(cap.tools.map((t) => t.id));
    const drop = <T,>(record?: Record<string, T>) => (record ? Object.fromEntries(Object.entries(record).filter(([k]) => !toolIds.has(k))) : record);
    edit({
      ...spec,
      capabilities: spec.capabilities.filter((c) => c.id !== cap.id),
      toolApproval: drop(spec.toolApproval),
      toolOverrides: drop(spec.toolOverrides),
    });
  };

  const save = async (): Promise<boolean> => {
    try {
      const saved = await ok(api.PUT('/api/v1/agents/{agentId}/draft', { params: { path: { agentId: agent.id } }, body: cleanSpec(spec) }));
      setSpec(saved.draft as AgentSpec);
      setDirty(false);
      return true;
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors?.length) {
        setErrors(err.problem.errors);
        setSummary(`The draft was not saved: ${err.problem.errors.length === 1 ? '1 problem' : `${err.problem.errors.length} problems`}`);
      } else setFailure(messageOf(err));
      return false;
    }
  };

  const run = async (action: 'save' | 'validate' | 'publish') => {
    setBusy(true);
    setErrors([]);
    setFailure(undefined);
    setStatus(undefined);
    try {
      if (!(await save())) return;
      if (action === 'save') return setStatus('Draft saved.');
      if (action === 'validate') {
        const result = await ok(api.POST('/api/v1/agents/{agentId}/draft/validate', { params: { path: { agentId: agent.id } } }));
        if (result.valid) return setStatus('The draft is valid: it can be published.');
        setErrors(result.errors);
        setSummary(`${result.errors.length === 1 ? '1 problem stops' : `${result.errors.length} problems stop`} this draft from publishing`);
        return;
      }
      const { data, error, response } = await api.POST('/api/v1/agents/{agentId}/publish', { params: { path: { agentId: agent.id } } });
      if (data) {
        setStatus(response.status === 201 ? `Version ${data.version} published` : `Nothing changed since version ${data.version}: it is still the latest.`);
        onPublished();
        return;
      }
      const problem = error as Schemas['Problem'] | undefined;
      if (problem?.errors?.length) {
        setErrors(problem.errors);
        setSummary(`Publishing refused: ${problem.errors.length === 1 ? '1 problem' : `${problem.errors.length} problems`}`);
      } else setFailure(problem?.detail ?? `Publishing failed (${response.status}).`);
    } catch (err) {
      setFailure(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  // Leaving with unsaved edits loses them (the key is in memory; the draft is not): ask first.
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  const unknown = spec.capabilities.map((c, i) => ({ c, i })).filter(({ c }) => catalog.data && !byId.has(c.id));
  const granted = new Set(org.data?.scopes ?? []);

  return (
    <form
      className="editor"
      aria-label="Draft"
      onSubmit={(e) => {
        e.preventDefault();
        void run('save');
      }}
    >
      <Alert>{failure}</Alert>
      <ErrorSummary title={summary} errors={errors} />
      <Alert>{catalog.error && `The capability catalog could not be loaded: ${catalog.error}`}</Alert>

      <div className="card">
        <MarkdownEditor
          id={fieldId('instructions')}
          label="Instructions"
          help="Markdown; the start of the agent's system prompt."
          value={spec.instructions}
          onChange={(instructions) => edit({ ...spec, instructions })}
          invalid={map.has('instructions')}
          describedBy={map.has('instructions') ? errorId('instructions') : undefined}
          maxLength={100000}
          readOnly={readOnly}
          rows={8}
        />
        <FieldErrors errors={map} path="instructions" />
      </div>

      <ModelSection spec={spec} errors={map} readOnly={readOnly} onSpec={edit} />

      <section aria-labelledby="capabilities-title" className="card">
        <h2 id="capabilities-title">Capabilities</h2>
        <ul className="switches">
          {(catalog.data?.items ?? []).map((cap) => {
            const index = spec.capabilities.findIndex((c) => c.id === cap.id);
            const on = index >= 0;
            const missing = cap.scopes.filter((s) => !granted.has(s));
            const unavailable = cap.available === false;
            const paths = on ? [`capabilities[${index}]`, `capabilities[${index}].id`] : [];
            const invalid = paths.some((p) => map.has(p));
            const describedBy = [`cap-${cap.id}-desc`, unavailable ? `cap-${cap.id}-why` : '', ...paths.filter((p) => map.has(p)).map(errorId)]
              .filter(Boolean)
              .join(' ');
            return (
              <li key={cap.id}>
                <button
                  type="button"
                  role="switch"
                  id={on ? fieldId(`capabilities[${index}]`) : `cap-${cap.id}`}
                  aria-checked={on}
                  aria-invalid={invalid || undefined}
                  aria-describedby={describedBy}
                  disabled={readOnly || (unavailable && !on)}
                  onClick={() => toggle(cap, !on)}
                  className="switch"
                >
                  <span className="switch__track" aria-hidden="true" />
                  {cap.name}
                </button>
                <p id={`cap-${cap.id}-desc`} className="help">
                  {cap.description}
                </p>
                {unavailable && (
                  <p id={`cap-${cap.id}-why`} className="help warning">
                    Unavailable: needs {missing.length > 1 ? 'the scopes' : 'the scope'} {(missing.length ? missing : cap.scopes).join(', ')}, which this
                    organization has not been granted.
                  </p>
                )}
                {paths.map((p) => (
                  <FieldErrors key={p} errors={map} path={p} />
                ))}
              </li>
            );
          })}
        </ul>
        {unknown.map(({ c, i }) => (
          <div key={c.id} className="field">
            <p id={fieldId(`capabilities[${i}].id`)} tabIndex={-1} className="warning">
              The draft names <code>{c.id}</code>, which no capability has.
            </p>
            <FieldErrors errors={map} path={`capabilities[${i}].id`} />
            {!readOnly && (
              <button type="button" onClick={() => edit({ ...spec, capabilities: spec.capabilities.filter((_, j) => j !== i) })}>
                Remove {c.id}
              </button>
            )}
          </div>
        ))}
      </section>

      {spec.capabilities.map((ref, i) => {
        const cap = byId.get(ref.id);
        if (!cap) return null;
        return (
          <CapabilitySettings
            key={ref.id}
            cap={cap}
            index={i}
            spec={spec}
            errors={map}
            readOnly={readOnly}
            onConfig={(config) => edit({ ...spec, capabilities: spec.capabilities.map((c, j) => (j === i ? { ...c, config } : c)) })}
            onSpec={edit}
          />
        );
      })}

      <section aria-labelledby="resources-title" className="card">
        <h2 id="resources-title">Resources</h2>
        <ResourcePicker
          legend="Knowledge collections"
          kind="knowledgeCollections"
          items={(collections.data?.items ?? []).map((c) => ({ id: c.id, name: c.name, description: c.description }))}
          list={collections}
          more="Show more collections"
          error={collections.error}
          spec={spec}
          errors={map}
          readOnly={readOnly}
          onSpec={edit}
        />
        <ResourcePicker
          legend="Skills"
          kind="skills"
          items={(skills.data?.items ?? []).map((s) => ({ id: s.id, name: s.name, description: s.description }))}
          list={skills}
          more="Show more skills"
          error={skills.error}
          spec={spec}
          errors={map}
          readOnly={readOnly}
          onSpec={edit}
        />
      </section>

      <section aria-labelledby="mcp-title" className="card">
        <h2 id="mcp-title">MCP connections</h2>
        <Alert>{connections.error && `The MCP connections could not be loaded: ${connections.error}`}</Alert>
        {connections.data && connections.data.items.length === 0 && <p className="muted">No MCP connections in this organization yet.</p>}
        <ul className="checks">
          {(connections.data?.items ?? []).map((c) => {
            const index = (spec.mcpServers ?? []).findIndex((b) => b.connection === c.id);
            const on = index >= 0;
            const paths = on ? [`mcpServers[${index}]`, `mcpServers[${index}].connection`, `mcpServers[${index}].tools`] : [];
            const describedBy = [`mcp-${c.id}-desc`, ...paths.filter((p) => map.has(p)).map(errorId)].join(' ');
            return (
              <li key={c.id}>
                <input
                  type="checkbox"
                  id={`mcp-${c.id}`}
                  checked={on}
                  disabled={readOnly}
                  aria-invalid={paths.some((p) => map.has(p)) || undefined}
                  aria-describedby={describedBy}
                  onChange={(e) =>
                    edit({
                      ...spec,
                      // Bound without `tools`: every tool the connection lists, as the API defines it.
                      mcpServers: e.target.checked
                        ? [...(spec.mcpServers ?? []), { connection: c.id }]
                        : (spec.mcpServers ?? []).filter((b) => b.connection !== c.id),
                    })
                  }
                />{' '}
                <label htmlFor={`mcp-${c.id}`}>
                  Bind <strong>{c.name}</strong>
                </label>
                <p id={`mcp-${c.id}-desc`} className="help">
                  {c.server} · {c.tools.length === 1 ? '1 tool' : `${c.tools.length} tools`}
                  {c.status === 'error' ? ` · last sync failed: ${c.error?.message ?? 'unknown error'}` : ''}
                </p>
                {paths.map((p) => (
                  <FieldErrors key={p} errors={map} path={p} />
                ))}
              </li>
            );
          })}
        </ul>
        <ShowMore list={connections}>Show more connections</ShowMore>
        {(spec.mcpServers ?? [])
          .map((b, i) => ({ b, i }))
          .filter(({ b }) => connections.data && !connections.data.items.some((c) => c.id === b.connection))
          .map(({ b, i }) => (
            <div key={b.connection} className="field">
              <p className="warning">
                {connections.data?.nextCursor ? (
                  <>
                    The draft binds <code>{b.connection}</code>, not among the connections shown yet.
                  </>
                ) : (
                  <>
                    The draft binds <code>{b.connection}</code>, which no connection of this organization is.
                  </>
                )}
              </p>
              <FieldErrors errors={map} path={`mcpServers[${i}].connection`} />
              {!readOnly && (
                <button type="button" onClick={() => edit({ ...spec, mcpServers: (spec.mcpServers ?? []).filter((_, j) => j !== i) })}>
                  Remove {b.connection}
                </button>
              )}
            </div>
          ))}
      </section>

      {!readOnly && (
        <div className="actions sticky">
          <button type="submit" disabled={busy}>
            Save draft
          </button>
          <button type="button" disabled={busy} onClick={() => void run('validate')}>
            Validate
          </button>
          <button type="button" className="primary" disabled={busy} onClick={() => void run('publish')}>
            Publish
          </button>
          {dirty && <span className="muted">Unsaved changes</span>}
        </div>
      )}
      <Status>{status}</Status>
    </form>
  );
}

function CapabilitySettings(props: {
  cap: Capability;
  index: number;
  spec: AgentSpec;
  errors: ErrorMap;
  readOnly: boolean;
  onConfig(config: Record<string, unknown>): void;
  onSpec(spec: AgentSpec): void;
}) {
  const { cap, index, spec, errors, readOnly } = props;
  const path = `capabilities[${index}]`;
  const ref = spec.capabilities[index];
  const titleId = `settings-${cap.id}`;
  const setApproval = (toolId: string, required: boolean) => {
    const next = { ...spec.toolApproval };
    if (required) next[toolId] = 'required';
    else delete next[toolId];
    props.onSpec({ ...spec, toolApproval: next });
  };
  const setOverride = (toolId: string, key: 'name' | 'description', value: string) => {
    const current = { ...spec.toolOverrides?.[toolId], [key]: value };
    props.onSpec({ ...spec, toolOverrides: { ...spec.toolOverrides, [toolId]: current } });
  };
  return (
    <section aria-labelledby={titleId} className="card">
      <h2 id={titleId}>{cap.name}</h2>
      <FieldErrors errors={errors} path={`${path}.config`} />
      <SchemaForm
        schema={cap.configSchema as JsonSchema}
        value={ref.config ?? {}}
        onChange={props.onConfig}
        path={`${path}.config`}
        errors={errors}
        disabled={readOnly}
      />
      {cap.tools.length > 0 && (
        <>
          <h3>Tools</h3>
          <ul className="tools">
            {cap.tools.map((tool) => {
              const approvalPath = `toolApproval.${tool.id}`;
              const namePath = `toolOverrides.${tool.id}.name`;
              const descPath = `toolOverrides.${tool.id}.description`;
              const override = spec.toolOverrides?.[tool.id] ?? {};
              const overrideErrors = [namePath, descPath, `toolOverrides.${tool.id}`].some((p) => errors.has(p));
              return (
                <li key={tool.id}>
                  <div>
                    <code>{tool.id}</code> <span className={`risk risk--${tool.risk}`}>{tool.risk.replace('_', ' ')}</span>
                  </div>
                  <p className="help">{tool.description}</p>
                  <div className="field--check">
                    <input
                      type="checkbox"
                      id={fieldId(approvalPath)}
                      checked={tool.requiresApproval || spec.toolApproval?.[tool.id] === 'required'}
                      disabled={readOnly || tool.requiresApproval}
                      aria-invalid={errors.has(approvalPath) || undefined}
                      aria-describedby={
                        [tool.requiresApproval ? `why-${tool.id}` : '', errors.has(approvalPath) ? errorId(approvalPath) : ''].filter(Boolean).join(' ') ||
                        undefined
                      }
                      onChange={(e) => setApproval(tool.id, e.target.checked)}
                    />
                    <label htmlFor={fieldId(approvalPath)}>Require approval for {tool.id}</label>
                  </div>
                  {tool.requiresApproval && (
                    <p className="help" id={`why-${tool.id}`}>
                      Always asks: {tool.interruptBefore ? 'it interrupts before running' : `its risk is ${tool.risk.replace('_', ' ')}`}.
                    </p>
                  )}
                  <FieldErrors errors={errors} path={approvalPath} />
                  <details open={overrideErrors || Boolean(override.name || override.description)}>
                    <summary>How the model sees {tool.id}</summary>
                    <FieldErrors errors={errors} path={`toolOverrides.${tool.id}`} />
                    <div className="field">
                      <label htmlFor={fieldId(namePath)}>Offered name for {tool.id}</label>
                      <input
                        id={fieldId(namePath)}
                        type="text"
                        placeholder={tool.id}
                        value={override.name ?? ''}
                        readOnly={readOnly}
                        aria-invalid={errors.has(namePath) || undefined}
                        aria-describedby={errors.has(namePath) ? errorId(namePath) : undefined}
                        onChange={(e) => setOverride(tool.id, 'name', e.target.value)}
                      />
                      <FieldErrors errors={errors} path={namePath} />
                    </div>
                    <div className="field">
                      <label htmlFor={fieldId(descPath)}>Offered description for {tool.id}</label>
                      <textarea
                        id={fieldId(descPath)}
                        rows={3}
                        placeholder={tool.description}
                        value={override.description ?? ''}
                        readOnly={readOnly}
                        aria-invalid={errors.has(descPath) || undefined}
                        aria-describedby={errors.has(descPath) ? errorId(descPath) : undefined}
                        onChange={(e) => setOverride(tool.id, 'description', e.target.value)}
                      />
                      <FieldErrors errors={errors} path={descPath} />
                    </div>
                  </details>
                </li>
              );
            })}
          </ul>
        </>
      )}
    </section>
  );
}

function ResourcePicker(props: {
  legend: string;
  kind: 'knowledgeCollections' | 'skills';
  items: { id: string; name: string; description?: string | null }[];
  /** The list the items came from: until its last page is read, a bound id not among them may be on a later one. */
  list: Paged<unknown>;
  more: string;
  error?: string;
  spec: AgentSpec;
  errors: ErrorMap;
  readOnly: boolean;
  onSpec(spec: AgentSpec): void;
}) {
  const bound = props.spec.resources?.[props.kind] ?? [];
  const known = new Set(props.items.map((i) => i.id));
  const set = (ids: string[]) => props.onSpec({ ...props.spec, resources: { ...props.spec.resources, [props.kind]: ids } });
  const unseen = props.list.data?.nextCursor ? 'Bound, not shown yet' : 'Missing';
  const entries = [...props.items, ...bound.filter((id) => !known.has(id)).map((id) => ({ id, name: `${unseen}: ${id}`, description: undefined }))];
  return (
    <fieldset>
      <legend>{props.legend}</legend>
      <Alert>{props.error}</Alert>
      {entries.length === 0 && <p className="muted">None in this organization yet.</p>}
      {entries.map((item) => {
        const index = bound.indexOf(item.id);
        const path = `resources.${props.kind}[${index}]`;
        const id = index >= 0 ? fieldId(path) : `${props.kind}-${item.id}`;
        return (
          <div key={item.id} className="field--check">
            <input
              type="checkbox"
              id={id}
              checked={index >= 0}
              disabled={props.readOnly}
              aria-invalid={(index >= 0 && props.errors.has(path)) || undefined}
              aria-describedby={index >= 0 && props.errors.has(path) ? errorId(path) : undefined}
              onChange={(e) => set(e.target.checked ? [...bound, item.id] : bound.filter((b) => b !== item.id))}
            />
            <label htmlFor={id}>{visibleText(item.name)}</label>
            {index >= 0 && <FieldErrors errors={props.errors} path={path} />}
          </div>
        );
      })}
      <ShowMore list={props.list}>{props.more}</ShowMore>
    </fieldset>
  );
}
