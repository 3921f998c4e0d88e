import { useState } from 'react';
import { messageOf, ok } from '../api/client';
import { Alert, formatTime, ShowMore, Status, useLoad, usePages, visibleText } from '../components/feedback';
import { Markdown } from '../components/markdown';
import { SimpleForm } from '../components/simple-form';
import { Link, navigate, PageTitle } from '../router';
import { can, useSession } from '../session';

export function KnowledgePage({ collectionId }: { collectionId?: string }) {
  return collectionId ? <Collection id={collectionId} /> : <Collections />;
}

function Collections() {
  const { api, me } = useSession();
  const list = usePages((cursor) => ok(api.GET('/api/v1/knowledge/collections', { params: { query: { limit: 200, ...(cursor ? { cursor } : {}) } } })), [api]);
  return (
    <>
      <PageTitle>Knowledge</PageTitle>
      <Alert>{list.error}</Alert>
      {list.data && list.data.items.length === 0 && <p className="muted">No knowledge collections yet.</p>}
      {list.data && list.data.items.length > 0 && (
        <table>
          <caption className="visually-hidden">Knowledge collections</caption>
          <thead>
            <tr>
              <th scope="col">Collection</th>
              <th scope="col">Documents</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((c) => (
              <tr key={c.id}>
                <td>
                  <Link to={`/knowledge/${c.id}`}>{visibleText(c.name)}</Link>
                  {c.description && <div className="muted small">{visibleText(c.description)}</div>}
                </td>
                <td>{c.documentCount}</td>
                <td>{formatTime(c.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowMore list={list}>Show more collections</ShowMore>
      {can(me, 'build') && (
        <SimpleForm
          title="New collection"
          submitLabel="Create collection"
          fields={[
            { name: 'name', label: 'Name', required: true },
            { name: 'description', label: 'Description' },
          ]}
          submit={async (v) => {
            const created = await ok(
              api.POST('/api/v1/knowledge/collections', { body: { name: v.name, ...(v.description ? { description: v.description } : {}) } }),
            );
            navigate(`/knowledge/${created.id}`);
          }}
        />
      )}
    </>
  );
}

function Collection({ id }: { id: string }) {
  const { api, me } = useSession();
  const collection = useLoad(() => ok(api.GET('/api/v1/knowledge/collections/{id}', { params: { path: { id } } })), [api, id]);
  const documents = usePages(
    (cursor) => ok(api.GET('/api/v1/knowledge/collections/{id}/documents', { params: { path: { id }, query: { limit: 200, ...(cursor ? { cursor } : {}) } } })),
    [api, id],
  );
  const [open, setOpen] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();
  const builder = can(me, 'build');
  const remove = async (docId: string, title: string) => {
    if (!window.confirm(`Delete the document “${visibleText(title)}”?`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/knowledge/collections/{id}/documents/{docId}', { params: { path: { id, docId } } }));
      setStatus(`Deleted “${visibleText(title)}”.`);
      documents.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  const removeCollection = async () => {
    if (!collection.data || !window.confirm(`Delete the collection “${visibleText(collection.data.name)}” and its documents?`)) return;
    setError(undefined);
    try {
      await ok(api.DELETE('/api/v1/knowledge/collections/{id}', { params: { path: { id } } }));
      navigate('/knowledge');
    } catch (err) {
      setError(messageOf(err));
    }
  };
  if (collection.error) return <Alert>{collection.error}</Alert>;
  if (!collection.data) return <p className="muted">Loading…</p>;
  return (
    <>
      <PageTitle>{visibleText(collection.data.name)}</PageTitle>
      <p>
        <Link to="/knowledge">All collections</Link>
      </p>
      {collection.data.description && <p>{collection.data.description}</p>}
      <Alert>{error ?? documents.error}</Alert>
      <Status>{status}</Status>
      <h2>Documents</h2>
      {documents.data && documents.data.items.length === 0 && <p className="muted">No documents yet.</p>}
      <ul className="plain">
        {documents.data?.items.map((d) => (
          <li key={d.id} className="card">
            <h3>{visibleText(d.title)}</h3>
            <div className="actions">
              <button type="button" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? undefined : d.id)}>
                {open === d.id ? 'Hide' : 'Show'} {d.title}
              </button>
              {builder && (
                <button type="button" className="danger" onClick={() => void remove(d.id, d.title)}>
                  Delete {visibleText(d.title)}
                </button>
              )}
            </div>
            {open === d.id && <DocumentBody collectionId={id} docId={d.id} />}
          </li>
        ))}
      </ul>
      <ShowMore list={documents}>Show more documents</ShowMore>
      {builder && (
        <>
          <SimpleForm
            title="Add a document"
            submitLabel="Add document"
            fields={[
              { name: 'title', label: 'Title', required: true },
              { name: 'content', label: 'Content', kind: 'textarea', required: true },
            ]}
            submit={async (v) => {
              await ok(api.POST('/api/v1/knowledge/collections/{id}/documents', { params: { path: { id } }, body: { title: v.title, content: v.content } }));
              setStatus(`Added “${visibleText(v.title)}”.`);
              documents.reload();
            }}
          />
          <button type="button" className="danger" onClick={() => void removeCollection()}>
            Delete collection
          </button>
        </>
      )}
    </>
  );
}

function DocumentBody({ collectionId, docId }: { collectionId: string; docId: string }) {
  const { api } = useSession();
  const doc = useLoad(
    () => ok(api.GET('/api/v1/knowledge/collections/{id}/documents/{docId}', { params: { path: { id: collectionId, docId } } })),
    [api, collectionId, docId],
  );
  if (doc.error) return <Alert>{doc.error}</Alert>;
  if (!doc.data) return <p className="muted">Loading…</p>;
  return <Markdown source={(doc.data as { content?: string }).content ?? ''} />;
}
