import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Resources (knowledge collections with their documents, skills), agents with their drafts, and
 * their published versions. A version is immutable in the database itself, and the resources it
 * binds cannot be deleted from under it.
 */
export class AgentsAndResources1764480000000 implements MigrationInterface {
  name = 'AgentsAndResources1764480000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE knowledge_collection (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        name text NOT NULL,
        description text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX knowledge_collection_org_idx ON knowledge_collection (org_id, created_at DESC, id DESC)`);
    // (org_id, id) is what the tenant-scoped foreign keys below reference: a row can only point at
    // a resource of its own organization, whatever the code does.
    await q.query(`ALTER TABLE knowledge_collection ADD CONSTRAINT knowledge_collection_org_id_key UNIQUE (org_id, id)`);

    await q.query(`
      CREATE TABLE knowledge_document (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        collection_id uuid NOT NULL,
        title text NOT NULL,
        content text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        -- The title weighs more than the body; 'english' stems so "running" finds "run".
        search tsvector GENERATED ALWAYS AS (
          setweight(to_tsvector('english'::regconfig, title), 'A') ||
          setweight(to_tsvector('english'::regconfig, content), 'B')
        ) STORED,
        created_at timestamptz NOT NULL DEFAULT now(),
        FOREIGN KEY (org_id, collection_id) REFERENCES knowledge_collection (org_id, id) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX knowledge_document_collection_idx ON knowledge_document (org_id, collection_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX knowledge_document_search_idx ON knowledge_document USING GIN (search)`);

    await q.query(`
      CREATE TABLE skill (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        name text NOT NULL,
        description text NOT NULL,
        instructions text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (org_id, id)
      )`);
    await q.query(`CREATE INDEX skill_org_idx ON skill (org_id, created_at DESC, id DESC)`);

    await q.query(`
      CREATE TABLE agent (
        id uuid PRIMARY KEY,
        org_id uuid NOT NULL REFERENCES org(id),
        slug text NOT NULL,
        name text NOT NULL,
        description text,
        draft jsonb NOT NULL,
        latest_version integer,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT agent_org_slug_key UNIQUE (org_id, slug),
        UNIQUE (org_id, id)
      )`);

    await q.query(`
      CREATE TABLE agent_version (
        org_id uuid NOT NULL,
        agent_id uuid NOT NULL,
        version integer NOT NULL CHECK (version >= 1),
        spec jsonb NOT NULL,
        spec_hash text NOT NULL,
        tool_digests jsonb NOT NULL,
        -- SHA-256 of the canonical JSON of { specHash, toolDigests }: what a publish would create.
        content_hash text NOT NULL,
        published_at timestamptz NOT NULL DEFAULT now(),
        published_by text NOT NULL,
        PRIMARY KEY (agent_id, version),
        FOREIGN KEY (org_id, agent_id) REFERENCES agent (org_id, id),
        -- Never two versions of the same reviewed content. The spec alone is not the key: the same
        -- spec is published again, on purpose, to pin tool definitions the code has changed.
        CONSTRAINT agent_version_content_key UNIQUE (agent_id, content_hash)
      )`);
    // Published means immutable, enforced where no code path can forget it.
    await q.query(`
      CREATE FUNCTION agent_version_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'agent_version is immutable: a published version cannot be changed or deleted';
      END $$`);
    await q.query(`
      CREATE TRIGGER agent_version_no_change BEFORE UPDATE OR DELETE ON agent_version
      FOR EACH ROW EXECUTE FUNCTION agent_version_immutable()`);

    // Which resources each version binds. The foreign keys (no cascade) are what refuses deleting a
    // bound resource, even under a race with a publish.
    await q.query(`
      CREATE TABLE agent_version_resource (
        org_id uuid NOT NULL,
        agent_id uuid NOT NULL,
        version integer NOT NULL,
        collection_id uuid,
        skill_id uuid,
        FOREIGN KEY (agent_id, version) REFERENCES agent_version (agent_id, version),
        FOREIGN KEY (org_id, collection_id) REFERENCES knowledge_collection (org_id, id),
        FOREIGN KEY (org_id, skill_id) REFERENCES skill (org_id, id),
        CHECK ((collection_id IS NULL) <> (skill_id IS NULL))
      )`);
    await q.query(`
      CREATE TRIGGER agent_version_resource_no_change BEFORE UPDATE OR DELETE ON agent_version_resource
      FOR EACH ROW EXECUTE FUNCTION agent_version_immutable()`);
    await q.query(`CREATE INDEX agent_version_resource_version_idx ON agent_version_resource (agent_id, version)`);
    await q.query(`CREATE INDEX agent_version_resource_collection_idx ON agent_version_resource (collection_id) WHERE collection_id IS NOT NULL`);
    await q.query(`CREATE INDEX agent_version_resource_skill_idx ON agent_version_resource (skill_id) WHERE skill_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE agent_version_resource`);
    await q.query(`DROP TABLE agent_version`);
    await q.query(`DROP FUNCTION agent_version_immutable()`);
    await q.query(`DROP TABLE agent`);
    await q.query(`DROP TABLE skill`);
    await q.query(`DROP TABLE knowledge_document`);
    await q.query(`DROP TABLE knowledge_collection`);
  }
}
