import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AuditService } from '../../audit/audit.service';
import { actingKeyOf, actorOf, isOrgPrincipal, orgIdOf, RequestContext } from '../../auth/principal';
import type { ToolRisk } from '../../capabilities/capability.types';
import { ApiError, FieldError } from '../../common/api-error';
import { isUniqueViolation } from '../../common/db-errors';
import { Page, PageQuery } from '../../common/pagination';
import { EgressService } from '../../egress/egress.service';
import { deleteUnlessBound } from '../../database/delete-unless-bound';
import { sealStoredUrls } from '../../database/seal-stored-urls';
import { SecretOpenError, SecretsService } from '../../secrets/secrets.service';
import { shownUrl, urlHidesSomething } from '../../common/url-secrets';
import type { McpConnectionView } from '../mcp-catalog.dto';
import { McpServerRegistry } from '../mcp-server-registry.service';
import { McpClientPool, McpTarget, McpUpstreamError } from './mcp-client-pool.service';
import { McpConnectionSync } from './mcp-connection-sync.service';
import { McpConnectionRow, McpConnectionsRepository } from './mcp-connections.repository';
import { auditedDiff, auditedToolNames, ListedMcpTool, riskOf, toolListDiff, toolListDiffInTurns } from './mcp-tools';
import { credentialsAt, givenCredentials, parseCredentials, stillMovable } from './mcp-credentials';
import { ownRisk, toConnectionView } from './mcp-connection-view';
import { connectFailure, secretUnreadable } from './mcp-connection-errors';
import { countingTransaction, countUnderOrgLock, holdActingKey } from '../../database/org-limit';

/**
 * An organization's MCP connections: connect and list on creation, sync, risk decisions,
 * credential rotation, a move to another URL, deletion (the tool lists' refresh, and what agents and the executor read,
 * in McpConnectionSync). Every talk with a server happens with no database connection
 * held (read, release, talk, then write), so a hung server costs a timeout and nothing else.
 */
@Injectable()
export class McpConnectionsService implements OnApplicationBootstrap {
  private readonly logger = new Logger(McpConnectionsService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly repository: McpConnectionsRepository,
    private readonly registry: McpServerRegistry,
    private readonly pool: McpClientPool,
    private readonly secrets: SecretsService,
    private readonly egress: EgressService,
    private readonly audit: AuditService,
    private readonly connectionSync: McpConnectionSync,
  ) {}

  /** Connections saved before URLs holding a token were sealed are sealed now. */
  onApplicationBootstrap(): Promise<void> {
    return sealStoredUrls(this.dataSource, 'mcp_connection', (url) => this.secrets.seal(url), this.logger);
  }

  async create(ctx: RequestContext, dto: { server: string; name: string; url?: string; credentials?: Record<string, unknown> }): Promise<McpConnectionView> {
    const orgId = orgIdOf(ctx);
    const entry = this.registry.get(dto.server);
    if (!entry)
      throw ApiError.invalidRequest([
        { path: 'server', code: 'unknown_server', message: `no catalog entry has the id "${dto.server}" (GET /mcp-servers lists them)` },
      ]);
    const errors: FieldError[] = [];
    const credentials = parseCredentials(entry, dto.credentials, 'credentials', errors);
    if (entry.descriptor.urlRequired && dto.url === undefined)
      errors.push({ path: 'url', code: 'required', message: `the "${entry.definition.id}" server needs a url` });
    if (!entry.descriptor.urlRequired && dto.url !== undefined)
      errors.push({ path: 'url', code: 'not_allowed', message: `the "${entry.definition.id}" server's address is fixed by the catalog; send no url` });
    if (errors.length > 0) throw ApiError.invalidRequest(errors);
    const missing = entry.definition.scopes.filter((s) => isOrgPrincipal(ctx.principal) && !ctx.principal.orgScopes.includes(s));
    if (missing.length > 0) {
      throw new ApiError('scope_not_granted', `The organization lacks scopes the "${entry.definition.id}" server needs: ${missing.join(', ')}.`, undefined, {
        missingScopes: missing,
      });
    }
    if (dto.url !== undefined) await this.egress.assertAllowed(dto.url, 'url', orgId);
    // Before a server is started or called for it (a local one is a process of its own); held again at the insert.
    const held = await countingTransaction(this.dataSource, 'mcp_connection', orgId, (m) => countUnderOrgLock(m, 'mcp_connection', orgId));
    if (held >= MAX_MCP_CONNECTIONS_PER_ORG) throw tooManyConnections();
    if (await this.repository.getByName(orgId, dto.name)) throw ApiError.conflict(`A connection named "${dto.name}" already exists in the organization.`);

    const id = randomUUID();
    const target: McpTarget = { orgId, connectionId: id, entry, url: dto.url ?? null, credentials };
    let tools: ListedMcpTool[];
    try {
      tools = await this.pool.listTools(target, { timeoutMs: this.connectionSync.listTimeoutMs('sync') });
    } catch (err) {
      await this.pool.release(id);
      throw connectFailure(err, 'Nothing was stored.');
    }
    const names = Object.keys(credentials).sort();
    // A token in the query (`?api_key=`, as hosted servers take it) is a credential: sealed, never shown.
    const url = dto.url === undefined ? null : shownUrl(dto.url);
    try {
      const row = await countingTransaction(this.dataSource, 'mcp_connection', orgId, async (m) => {
        const live = await countUnderOrgLock(m, 'mcp_connection', orgId);
        // The server's listing can take as long as the server likes: a key revoked meanwhile stores nothing.
        await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
        if (live >= MAX_MCP_CONNECTIONS_PER_ORG) throw tooManyConnections();
        const inserted = await this.repository.insert(m, orgId, {
          id,
          server: entry.definition.id,
          name: dto.name,
          url,
          url_sealed: dto.url !== undefined && urlHidesSomething(dto.url) ? this.secrets.seal(dto.url) : null,
          credentials: names.length > 0 ? this.secrets.seal(JSON.stringify(credentials)) : null,
          credential_names: names,
          tools,
        });
        await this.audit.record(m, {
          type: 'mcp_connection.created',
          orgId,
          actor: actorOf(ctx.principal),
          target: { type: 'mcp_connection', id },
          data: { server: entry.definition.id, name: dto.name, url, credentialNames: names, ...auditedToolNames(tools) },
        });
        return inserted;
      });
      return this.view(row);
    } catch (err) {
      await this.pool.release(id);
      if (isUniqueViolation(err)) throw ApiError.conflict(`A connection named "${dto.name}" already exists in the organization.`);
      throw err;
    }
  }

  async list(orgId: string, query: PageQuery): Promise<Page<McpConnectionView>> {
    const page = await this.repository.list(orgId, query);
    return { items: page.items.map((r) => this.view(r)), nextCursor: page.nextCursor };
  }

  async get(orgId: string, id: string): Promise<McpConnectionView> {
    return this.view(await this.row(orgId, id));
  }

  /** Lists the tools again. A server that cannot be reached leaves the last good list, with `status: error`. */
  async sync(ctx: RequestContext, id: string): Promise<McpConnectionView> {
    const orgId = orgIdOf(ctx);
    await this.row(orgId, id);
    let row: McpConnectionRow | undefined;
    try {
      row = await this.connectionSync.refresh(orgId, id, 'sync', actorOf(ctx.principal));
    } catch (err) {
      if (err instanceof SecretOpenError) throw secretUnreadable();
      throw err;
    }
    if (!row) throw ApiError.notFound('MCP connection');
    return this.view(row);
  }

  async setRisk(ctx: RequestContext, id: string, tool: string, risk: ToolRisk): Promise<McpConnectionView> {
    const orgId = orgIdOf(ctx);
    const row = await this.dataSource.transaction(async (m) => {
      const current = await this.repository.get(orgId, id, m, true);
      if (!current) throw ApiError.notFound('MCP connection');
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      const listed = current.tools.find((t) => t.name === tool);
      if (!listed) throw ApiError.notFound('tool on this connection');
      const before = riskOf(listed, this.trusts(current), ownRisk(current.risk_overrides, tool));
      const updated = (await this.repository.setRisk(m, orgId, id, tool, risk))!;
      await this.audit.record(m, {
        type: 'mcp_connection.risk_set',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'mcp_connection', id },
        data: { name: current.name, tool, risk, previousRisk: before.risk, previousRiskSource: before.riskSource },
      });
      return updated;
    });
    return this.view(row);
  }

  /** Replaces the stored credentials; the next use of the connection opens a new client with them. */
  async setCredentials(ctx: RequestContext, id: string, given: Record<string, unknown>): Promise<McpConnectionView> {
    const orgId = orgIdOf(ctx);
    const current = await this.row(orgId, id);
    const entry = this.registry.get(current.server);
    if (!entry) throw ApiError.conflict(`The catalog no longer has the "${current.server}" server; delete the connection.`);
    const errors: FieldError[] = [];
    const credentials = parseCredentials(entry, given, 'credentials', errors);
    if (errors.length > 0) throw ApiError.invalidRequest(errors);
    const names = Object.keys(credentials).sort();
    const row = await this.dataSource.transaction(async (m) => {
      const updated = await this.repository.setCredentials(m, orgId, id, names.length > 0 ? this.secrets.seal(JSON.stringify(credentials)) : null, names);
      if (!updated) throw ApiError.notFound('MCP connection');
      await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
      await this.audit.record(m, {
        type: 'mcp_connection.credentials_updated',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'mcp_connection', id },
        data: { name: updated.name, credentialNames: names },
      });
      return updated;
    });
    await this.pool.release(id);
    return this.view(row);
  }

  /**
   * Moves the connection to another address of its server (a vendor's new endpoint, a server
   * moved), bound by published versions or not: the tools are listed there first, with the stored
   * credentials, and nothing changes unless that works. The new list is stored as a sync stores
   * it (a version whose tools differ there shows drift, as after any sync).
   */
  async setUrl(ctx: RequestContext, id: string, url: string, given?: Record<string, unknown>): Promise<McpConnectionView> {
    const orgId = orgIdOf(ctx);
    const current = await this.row(orgId, id);
    const entry = this.registry.get(current.server);
    if (!entry) throw ApiError.conflict(`The catalog no longer has the "${current.server}" server; delete the connection.`);
    if (!entry.descriptor.urlRequired) {
      throw ApiError.invalidRequest([
        {
          path: 'url',
          code: 'not_allowed',
          message: `the "${entry.definition.id}" server's address is fixed by the catalog; its connections have no url to change`,
        },
      ]);
    }
    const replacing = given === undefined ? undefined : givenCredentials(entry, given);
    await this.egress.assertAllowed(url, 'url', orgId);
    let target: McpTarget;
    try {
      target = await this.connectionSync.target(orgId, id);
    } catch (err) {
      if (err instanceof SecretOpenError) throw secretUnreadable();
      if (err instanceof McpUpstreamError) throw ApiError.notFound('MCP connection');
      throw err;
    }
    const credentials = credentialsAt(target, url, replacing);
    // A client of its own (under an id no row has), so the connection's pooled one keeps serving calls until the change commits.
    const probe = randomUUID();
    let tools: ListedMcpTool[];
    try {
      tools = await this.pool.listTools({ ...target, credentials, connectionId: probe, url }, { timeoutMs: this.connectionSync.listTimeoutMs('sync') });
    } catch (err) {
      throw connectFailure(err, 'The connection was not changed.');
    } finally {
      await this.pool.release(probe);
    }
    const shown = shownUrl(url);
    // Compared before the transaction, in turns, as a refresh compares (O-F6): against the list
    // stored when the move began, and again when a refresh stored another meanwhile.
    let compared = { digest: current.tools_digest, diff: await toolListDiffInTurns(current.tools, tools) };
    let row: McpConnectionRow | undefined;
    for (let attempt = 1; row === undefined; attempt++) {
      const outcome = await this.dataSource.transaction(async (m) => {
        await holdActingKey(m, orgId, actingKeyOf(ctx.principal)); // the new address was listed for as long as it liked
        const before = await this.repository.get(orgId, id, m, true);
        if (!before) throw ApiError.notFound('MCP connection');
        if (replacing === undefined) stillMovable(this.connectionSync.targetOf(before), url); // as the row stands now (O-F1)
        // Refreshed while this compared: compared again, outside (a few times; then here).
        if (before.tools_digest !== compared.digest && attempt < MOVE_COMPARISONS) return { refreshed: before };
        const diff = before.tools_digest === compared.digest ? compared.diff : toolListDiff(before.tools, tools);
        let updated = (await this.repository.setUrl(m, orgId, id, { shown, sealed: urlHidesSomething(url) ? this.secrets.seal(url) : null }, tools))!;
        const names = replacing && Object.keys(replacing).sort();
        if (names)
          updated = (await this.repository.setCredentials(m, orgId, id, names.length > 0 ? this.secrets.seal(JSON.stringify(replacing)) : null, names))!;
        await this.audit.record(m, {
          type: 'mcp_connection.url_updated',
          orgId,
          actor: actorOf(ctx.principal),
          target: { type: 'mcp_connection', id },
          data: { name: before.name, url: shown, previousUrl: before.url, ...(names && { credentialNames: names }), ...auditedDiff(diff) },
        });
        return { updated };
      });
      if ('updated' in outcome) row = outcome.updated;
      else compared = { digest: outcome.refreshed.tools_digest, diff: await toolListDiffInTurns(outcome.refreshed.tools, tools) };
    }
    // This node's client of the old address goes now; another node's at its next use (its target's URL differs).
    await this.pool.release(id);
    return this.view(row);
  }

  async delete(ctx: RequestContext, id: string): Promise<void> {
    const orgId = orgIdOf(ctx);
    await this.dataSource.transaction(async (m) => {
      const current = await deleteUnlessBound('MCP connection', {
        lock: async () => (await this.repository.get(orgId, id, m, true)) ?? undefined,
        // Held once the row is (and before anything is removed): a key revoked meanwhile deletes nothing.
        boundBy: async () => {
          await holdActingKey(m, orgId, actingKeyOf(ctx.principal));
          return this.repository.boundBy(m, orgId, id);
        },
        remove: () => this.repository.delete(m, orgId, id),
      });
      await this.audit.record(m, {
        type: 'mcp_connection.deleted',
        orgId,
        actor: actorOf(ctx.principal),
        target: { type: 'mcp_connection', id },
        data: { server: current.server, name: current.name },
      });
    });
    await this.pool.release(id);
  }

  private async row(orgId: string, id: string): Promise<McpConnectionRow> {
    const row = await this.repository.get(orgId, id);
    if (!row) throw ApiError.notFound('MCP connection');
    return row;
  }

  private trusts(row: McpConnectionRow): boolean {
    return this.registry.get(row.server)?.definition.trustAnnotations ?? false;
  }

  view(row: McpConnectionRow): McpConnectionView {
    return toConnectionView(row, this.trusts(row));
  }
}

/** Connections one organization may have: each may be a process on every node (a local server) or a pooled client. */
export const MAX_MCP_CONNECTIONS_PER_ORG = 50;

/** How many times a move compares the lists outside its transaction before, refreshed each time meanwhile, it compares inside. */
const MOVE_COMPARISONS = 3;

function tooManyConnections(): ApiError {
  return ApiError.conflict(`An organization has at most ${MAX_MCP_CONNECTIONS_PER_ORG} MCP connections; delete one first.`);
}
