import { useState } from 'react';
import { messageOf, ok } from '../api/client';
import { Alert, ShowMore, Status, usePages } from '../components/feedback';
import { Markdown } from '../components/markdown';
import { SimpleForm } from '../components/simple-form';
import { PageTitle } from '../router';
import { can, useSession } from '../session';

export function SkillsPage() {
  const { api, me } = useSession();
  const skills = usePages((cursor) => ok(api.GET('/api/v1/skills', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const builder = can(me, 'build');
  const remove = async (id: string, name: string) => {
    if (!window.confirm(`Delete the skill “${name}”?`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/skills/{id}', { params: { path: { id } } }));
      setStatus(`Deleted “${name}”.`);
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
            <h2>{s.name}</h2>
            <p>{s.description}</p>
            <Instructions name={s.name} source={s.instructions} />
            {builder && (
              <button type="button" className="danger" onClick={() => void remove(s.id, s.name)}>
                Delete {s.name}
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
            setStatus(`Created “${v.name}”.`);
            skills.reload();
          }}
        />
      )}
    </>
  );
}

/**
 * A skill's instructions, rendered when opened: up to 100,000 characters of Markdown each, a page
 * of them rendered at once held the page for seconds (about 4 MiB, 42 skills: 7 s).
 */
function Instructions({ name, source }: { name: string; source: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>Instructions of {name}</summary>
      {open && <Markdown source={source} />}
    </details>
  );
}
