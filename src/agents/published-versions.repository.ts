import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AgentIdentity, VersionRow } from './version-store.service';

/**
 * The reads of a published version the hot paths make: an agent's identity with its `latest`
 * pointer, and one version row (VersionStore keeps the rows, which never change). A tool call
 * reads the pointer with the key instead (ApiKeysRepository.findActiveWithAgent).
 */
@Injectable()
export class PublishedVersionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  async agent(orgId: string, agentId: string): Promise<AgentIdentity | undefined> {
    const [agent]: AgentIdentity[] = await this.dataSource.query(`SELECT id, slug, name, latest_version FROM agent WHERE org_id = $1 AND id = $2`, [
      orgId,
      agentId,
    ]);
    return agent;
  }

  async version(orgId: string, agentId: string, version: number): Promise<VersionRow | undefined> {
    const [row]: VersionRow[] = await this.dataSource.query(`SELECT * FROM agent_version WHERE org_id = $1 AND agent_id = $2 AND version = $3`, [
      orgId,
      agentId,
      version,
    ]);
    return row;
  }
}
