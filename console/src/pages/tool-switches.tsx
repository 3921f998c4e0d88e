import { useState, type FormEvent } from 'react';
import { messageOf, ok, ProblemError, type FieldError, type Schemas } from '../api/client';
import { PrincipalName, usePrincipalNames } from '../components/actor';
import { Alert, errorMap, FieldErrors, fieldErrorProps, fieldId, formatTime, Status, useLoad, visibleText } from '../components/feedback';
import { PageTitle } from '../router';
import { can, useSession } from '../session';

type Switch = Schemas['ToolSwitchView'];

/** The most switches one page of `GET /tools/disabled` holds (the API's page limit). */
const PAGE_SIZE = 200;
/** The longest reason the API takes (SetToolDisabledDto). */
const REASON_MAX = 500;
/** Pages of the catalog or of the MCP connections read at most, following `nextCursor`. */
const MAX_PAGES = 10;

/** A tool as the switch names it: `memory-write/remember`, `mcp/<connection>/<tool>`. */
// An MCP tool is named by its vendor's server, any character but U+0000: `wipe` and `wipe` with a
// zero-width space are two tools that looked alike in the picker and the list, and an admin
// stopping one in an incident could pick the other (both listed, so nothing said it stops nothing).
const toolName = (capabilityId: string, toolId: string) => `${capabilityId}/${toolId}`;
const shown = (name: string) => visibleText(name);

/**
 * Incident response: the organization's disabled tools, each refused everywhere until an admin
 * enables it again (`PUT /tools/{capabilityId}/{toolId}/disabled`). Every role that reads the
 * organization sees the list; only an admin is offered the switches.
 */
export function ToolSwitchesPage() {
  const { api, me } = useSession();
  const admin = can(me, 'admin');
  const [pages, setPages] = useState(1);
  const switches = useLoad(async () => {
    const items: Switch[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < pages; i++) {
      const page = await ok(api.GET('/api/v1/tools/disabled', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } }));
      items.push(...page.items);
      if (!page.nextCursor) return { items, nextCursor: null };
      cursor = page.nextCursor;
    }
    return { items, nextCursor: cursor ?? null };
  }, [api, pages]);
  const names = usePrincipalNames(switches.data?.items.map((s) => s.disabledBy) ?? []);
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState<string>();

  const enable = async (s: Switch) => {
    const name = toolName(s.capabilityId, s.toolId);
    setError(undefined);
    setStatus(undefined);
    setBusy(name);
    try {
      await ok(
        api.PUT('/api/v1/tools/{capabilityId}/{toolId}/disabled', {
          params: { path: { capabilityId: s.capabilityId, toolId: s.toolId } },
          body: { disabled: false },
        }),
      );
      setStatus(`Enabled ${shown(name)}: its calls run again.`);
      switches.reload();
    } catch (err) {
      setError(`${shown(name)} was not enabled: ${messageOf(err)}`);
    } finally {
      setBusy(undefined);
    }
  };

  const items = switches.data?.items ?? [];
  return (
    <>
      <PageTitle>Tool switches</PageTitle>
      <p>
        A switch stops one tool for the whole organization. While a tool is disabled, every call of it, by every agent and every version, at every entry point
        (tool calls, MCP, runs), is refused <code>403 tool_disabled</code> and nothing runs, until an admin enables it again. Pending approvals of it cannot be
        approved meanwhile: they stay pending.
      </p>
      <Alert>{error ?? switches.error}</Alert>
      <Status>{status}</Status>
      <h2>Disabled tools</h2>
      {switches.data && items.length === 0 && <p className="muted">No tool is disabled: every tool runs as its agents&apos; versions say.</p>}
      {items.length > 0 && (
        <table>
          <caption className="visually-hidden">Tools disabled in this organization</caption>
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Reason</th>
              <th scope="col">Disabled</th>
              <th scope="col">By</th>
              {admin && (
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.map((s) => {
              const name = toolName(s.capabilityId, s.toolId);
              return (
                <tr key={name}>
                  <td>
                    <code>{shown(name)}</code>
                    {!s.listed && (
                      <p className="help">
                        No connection lists a tool of exactly this name now (a look-alike of a tool&apos;s name, or a connection deleted): this switch stops
                        nothing.
                      </p>
                    )}
                  </td>
                  <td>{s.reason ?? <span className="muted">none given</span>}</td>
                  <td>{formatTime(s.disabledAt)}</td>
                  <td>{s.disabledBy ? <PrincipalName id={s.disabledBy} names={names} /> : <span className="muted">unknown</span>}</td>
                  {admin && (
                    <td>
                      <div className="actions">
                        <button type="button" disabled={busy === name} onClick={() => void enable(s)}>
                          Enable {shown(name)}
                        </button>
                      </div>
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {switches.data?.nextCursor && (
        <div className="actions">
          <button type="button" disabled={switches.loading} onClick={() => setPages((n) => n + 1)}>
            Show more
          </button>
        </div>
      )}
      {admin && (
        <DisableTool
          disabled={new Set(items.map((s) => toolName(s.capabilityId, s.toolId)))}
          onDisabled={(message) => {
            setError(undefined);
            setStatus(message);
            switches.reload();
          }}
        />
      )}
    </>
  );
}

interface ToolChoice {
  capabilityId: string;
  toolId: string;
}

interface ChoiceGroup {
  label: string;
  tools: ToolChoice[];
}

/** Every page of a list, up to MAX_PAGES, following `nextCursor`. */
async function allPages<T>(read: (cursor?: string) => Promise<{ items: T[]; nextCursor: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await read(cursor);
    items.push(...page.items);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return items;
}

/**
 * The admin's form: a tool picked from what exists (the catalog's capabilities and the
 * organization's MCP connections), an optional reason. The server's refusals land at their field.
 */
function DisableTool({ disabled, onDisabled }: { disabled: ReadonlySet<string>; onDisabled(message: string): void }) {
  const { api } = useSession();
  const choices = useLoad(async () => {
    const [capabilities, connections] = await Promise.all([
      allPages((cursor) => ok(api.GET('/api/v1/agents/capabilities', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } }))),
      allPages((cursor) => ok(api.GET('/api/v1/mcp-connections', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } }))),
    ]);
    const groups: ChoiceGroup[] = capabilities
      .filter((c) => c.tools.length > 0)
      .map((c) => ({ label: `${c.name} (${c.id})`, tools: c.tools.map((t) => ({ capabilityId: c.id, toolId: t.id })) }));
    for (const conn of connections) {
      if (conn.tools.length === 0) continue;
      groups.push({ label: `MCP connection ${conn.name}`, tools: conn.tools.map((t) => ({ capabilityId: 'mcp', toolId: `${conn.name}/${t.name}` })) });
    }
    return groups;
  }, [api]);
  const flat = choices.data?.flatMap((g) => g.tools) ?? [];
  const [picked, setPicked] = useState('');
  const [reason, setReason] = useState('');
  const [errors, setErrors] = useState<FieldError[]>([]);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const map = errorMap(errors);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setErrors([]);
    setError(undefined);
    const tool = picked === '' ? undefined : flat[Number(picked)];
    if (!tool) return setErrors([{ path: 'tool', message: 'Pick the tool to disable.' }]);
    const name = toolName(tool.capabilityId, tool.toolId);
    const why = reason.trim();
    setBusy(true);
    try {
      await ok(
        api.PUT('/api/v1/tools/{capabilityId}/{toolId}/disabled', {
          params: { path: { capabilityId: tool.capabilityId, toolId: tool.toolId } },
          body: { disabled: true, ...(why ? { reason: why } : {}) },
        }),
      );
      setPicked('');
      setReason('');
      onDisabled(
        disabled.has(name)
          ? `${shown(name)} stays disabled, now ${why ? 'for the reason given' : 'without a reason'}.`
          : `Disabled ${shown(name)}: its calls are refused 403 tool_disabled until it is enabled again.`,
      );
    } catch (err) {
      if (err instanceof ProblemError && err.problem.errors?.length) setErrors(err.problem.errors);
      else if (err instanceof ProblemError && err.problem.code === 'unknown_tool') setErrors([{ path: 'tool', message: messageOf(err) }]);
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  const toolField = fieldId('tool');
  const reasonField = fieldId('reason');
  const reasonAria = fieldErrorProps(map, 'reason');
  return (
    <form className="card" onSubmit={submit} aria-labelledby="disable-tool-title" noValidate>
      <h2 id="disable-tool-title">Disable a tool</h2>
      <p className="help">
        Every agent and version of the organization is refused its calls at once (<code>403 tool_disabled</code>), and its pending approvals cannot be approved,
        until the tool is enabled again here.
      </p>
      <Alert>{error ?? choices.error}</Alert>
      <div className="field">
        <label htmlFor={toolField}>Tool</label>
        <select id={toolField} value={picked} onChange={(e) => setPicked(e.target.value)} {...fieldErrorProps(map, 'tool')}>
          <option value="">{choices.data ? 'Choose a tool…' : 'Loading the tools…'}</option>
          {choices.data?.map((g) => (
            <optgroup key={g.label} label={g.label}>
              {g.tools.map((t) => {
                const name = toolName(t.capabilityId, t.toolId);
                return (
                  <option key={name} value={flat.indexOf(t)}>
                    {disabled.has(name) ? `${shown(name)} (disabled: the reason given here replaces its reason)` : shown(name)}
                  </option>
                );
              })}
            </optgroup>
          ))}
        </select>
        <FieldErrors errors={map} path="tool" />
      </div>
      <div className="field">
        <label htmlFor={reasonField}>Reason (optional)</label>
        <input
          id={reasonField}
          type="text"
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          {...reasonAria}
          aria-describedby={[`${reasonField}-help`, reasonAria['aria-describedby'] ?? ''].filter(Boolean).join(' ')}
        />
        <p id={`${reasonField}-help`} className="help">
          Why, for example an incident number; at most {REASON_MAX} characters. It is shown in every refusal of the tool and in the audit log.
        </p>
        <FieldErrors errors={map} path="reason" />
      </div>
      <div className="actions">
        <button type="submit" className="danger" disabled={busy || !choices.data}>
          Disable tool
        </button>
      </div>
    </form>
  );
}
