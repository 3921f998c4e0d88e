import { useState } from 'react';
import { messageOf, ok, type Schemas } from '../api/client';
import { Alert, ShowMore, Status, usePages, visibleText } from '../components/feedback';
import { Markdown } from '../components/markdown';
import { SimpleForm } from '../components/simple-form';
import { PageTitle } from '../router';
import { can, useSession } from '../session';

export function SkillsPage() {
  const { api, me } = useSession();
  // Without instructions: each is read when its skill is opened (up to 100,000 characters; a page of whole skills was up to 4 MiB).
  const skills = usePages(
    async (cursor) =>
      (await ok(api.GET('/api/v1/skills', { params: { query: { view: 'basic', limit: 200, ...(cursor ? { cursor } : {}) } } }))) as {
        items: Schemas['SkillBasicView'][];
        nextCursor: string | null;
      },
    [api],
  );
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const builder = can(me, 'build');
  const remove = async (id: string, name: string) => {
    if (!window.confirm(`Delete the skill “${visibleText(name)}”?`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/skills/{id}', { params: { path: { id } } }));
      setStatus(`Deleted “${visibleText(name)}”.`);
      skills.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <>
      <PageTitle>Skills</PageTitle>
      <Alert>{error ?? skills.error}</Alert>
      <Status>{status}</Status>
      {skills.data && skills.data.items.length === 0 && <p className="muted">No skills yet.</p>}
      <ul className="plain">
        {skills.data?.items.map((s) => (
          <li key={s.id} className="card">
            <h2>{visibleText(s.name)}</h2>
            <p>{visibleText(s.description)}</p>
            <Instructions id={s.id} name={s.name} length={s.instructionsLength} />
            {builder && (
              <button type="button" className="danger" onClick={() => void remove(s.id, s.name)}>
                Delete {visibleText(s.name)}
              </button>
            )}
          </li>
        ))}
      </ul>
      <ShowMore list={skills}>Show more skills</ShowMore>
      {builder && (
        <SimpleForm
          title="New skill"
          submitLabel="Create skill"
          fields={[
            { name: 'name', label: 'Name', required: true },
            { name: 'description', label: 'Description', required: true },
            { name: 'instructions', label: 'Instructions', kind: 'markdown', required: true, help: 'Markdown the agent loads when it uses the skill.' },
          ]}
          submit={async (v) => {
            await ok(api.POST('/api/v1/skills', { body: { name: v.name, description: v.description, instructions: v.instructions } }));
            setStatus(`Created “${visibleText(v.name)}”.`);
            skills.reload();
          }}
        />
      )}
    </>
  );
}

/**
 * A skill's instructions, read and rendered when opened: up to 100,000 characters of Markdown each,
 * a page of them rendered at once held the page for seconds (about 4 MiB, 42 skills: 7 s), and
 * listing them all was that many bytes read for skills nobody opened.
 */
function Instructions({ id, name, length }: { id: string; name: string; length: number }) {
  const { api } = useSession();
  const [open, setOpen] = useState(false);
  const [source, setSource] = useState<string>();
  const [error, setError] = useState<string>();
  const toggle = (opened: boolean) => {
    setOpen(opened);
    if (!opened || source !== undefined) return;
    setError(undefined);
    ok(api.GET('/api/v1/skills/{id}', { params: { path: { id } } })).then(
      (skill) => setSource(skill.instructions),
      (err: unknown) => setError(messageOf(err)),
    );
  };
  return (
    <details onToggle={(e) => toggle(e.currentTarget.open)}>
      <summary>
        Instructions of {visibleText(name)} <span className="muted">({length.toLocaleString()} characters)</span>
      </summary>
      {open && error && <Alert>{error}</Alert>}
      {open && !error && (source === undefined ? <p className="muted">Loading…</p> : <Markdown source={source} />)}
    </details>
  );
}
