import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import { ResolvedResources, TOOL_NAME_PATTERN } from '../capabilities/capability.types';
import type { FieldError } from '../common/api-error';
import { missingScopes } from '../runtime/tool-policy';
import type { AgentSpec } from './built-version';
import { ownEntry } from './digests';
import { VersionBuilder } from './version-builder.service';

export type SpecErrorCode =
  | 'unknown_capability'
  | 'duplicate_capability'
  | 'invalid_config'
  | 'scope_not_granted'
  | 'unknown_tool'
  | 'invalid_tool_name'
  | 'duplicate_tool_name'
  | 'unknown_resource'
  | 'duplicate_resource';

export interface SpecError extends FieldError {
  code: SpecErrorCode;
}

export interface SpecValidation {
  errors: SpecError[];
  /** Problems found beyond `errors` (a config's list is bounded where it is checked). */
  omitted: number;
  /** Every capability's config with its defaults filled in; only meaningful when `errors` is empty. */
  normalized: AgentSpec;
  resources: ResolvedResources;
}

/**
 * Judges a draft against the code (the capability registry) and the organization (its scopes and
 * resources). Every problem is reported, each at its path, so a form can mark them all at once.
 */
@Injectable()
export class SpecValidator {
  constructor(
    private readonly registry: CapabilityRegistry,
    private readonly builder: VersionBuilder,
    private readonly dataSource: DataSource,
  ) {}

  async validate(orgId: string, orgScopes: readonly string[], draft: AgentSpec): Promise<SpecValidation> {
    const errors: SpecError[] = [];
    const granted = new Set(orgScopes);
    const capabilities: AgentSpec['capabilities'] = [];
    // Tool id -> its capability, for the tools of every attached (known) capability.
    const tools = new Map<string, string>();
    const firstIndex = new Map<string, number>();
    let omitted = 0;

    draft.capabilities.forEach((ref, i) => {
      const at = `capabilities[${i}]`;
      if (firstIndex.has(ref.id)) {
        errors.push({ path: `${at}.id`, code: 'duplicate_capability', message: `capability "${ref.id}" is already listed at capabilities[${firstIndex.get(ref.id)}]` });
        return;
      }
      firstIndex.set(ref.id, i);
      const registered = this.registry.get(ref.id);
      if (!registered) {
        errors.push({ path: `${at}.id`, code: 'unknown_capability', message: `no capability has the id "${ref.id}"` });
        return;
      }
      const config = this.registry.validateConfig(ref.id, ref.config);
      for (const e of config.errors) {
        errors.push({ path: configPath(at, e.path), code: 'invalid_config', message: e.message });
      }
      omitted += config.omitted ?? 0;
      const missing = missingScopes(registered.definition.scopes ?? [], granted);
      if (missing.length > 0) {
        errors.push({ path: at, code: 'scope_not_granted', message: `the organization lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')} that "${ref.id}" needs` });
      }
      for (const t of registered.tools) tools.set(t.declaration.id, ref.id);
      capabilities.push({ id: ref.id, config: config.value });
    });

    for (const key of Object.keys(draft.toolApproval ?? {})) {
      if (!tools.has(key)) errors.push({ path: `toolApproval.${key}`, code: 'unknown_tool', message: `"${key}" is not a tool of an attached capability` });
    }
    const overrides = draft.toolOverrides ?? {};
    // The name each tool is offered under, to find collisions; invalid names are reported once, as invalid.
    const offeredBy = new Map<string, string[]>();
    for (const toolId of tools.keys()) {
      const name = ownEntry(overrides, toolId)?.name;
      const offered = name !== undefined && TOOL_NAME_PATTERN.test(name) ? name : toolId;
      offeredBy.set(offered, [...(offeredBy.get(offered) ?? []), toolId]);
    }
    for (const [key, override] of Object.entries(overrides)) {
      if (!tools.has(key)) {
        errors.push({ path: `toolOverrides.${key}`, code: 'unknown_tool', message: `"${key}" is not a tool of an attached capability` });
        continue;
      }
      if (override.name === undefined) continue;
      if (!TOOL_NAME_PATTERN.test(override.name)) {
        errors.push({ path: `toolOverrides.${key}.name`, code: 'invalid_tool_name', message: `"${override.name}" is not a name a model accepts (${TOOL_NAME_PATTERN.source})` });
        continue;
      }
      const sharing = (offeredBy.get(override.name) ?? []).filter((id) => id !== key);
      if (sharing.length > 0) {
        errors.push({ path: `toolOverrides.${key}.name`, code: 'duplicate_tool_name', message: `"${override.name}" would also be the name of ${sharing.map((s) => `"${s}"`).join(', ')}` });
      }
    }

    const resources = await this.builder.resolveResources(orgId, draft);
    const known = {
      knowledgeCollections: new Set(resources.knowledgeCollections.map((r) => r.id)),
      skills: new Set(resources.skills.map((r) => r.id)),
    };
    for (const kind of ['knowledgeCollections', 'skills'] as const) {
      const seen = new Map<string, number>();
      (draft.resources?.[kind] ?? []).forEach((id, i) => {
        // Drafts saved before ids were lowercased on the way in may still hold one id twice.
        const first = seen.get(id.toLowerCase());
        if (first !== undefined) {
          errors.push({ path: `resources.${kind}[${i}]`, code: 'duplicate_resource', message: `"${id}" is already listed at resources.${kind}[${first}]` });
          return;
        }
        seen.set(id.toLowerCase(), i);
        if (!known[kind].has(id)) {
          errors.push({ path: `resources.${kind}[${i}]`, code: 'unknown_resource', message: `no ${kind === 'skills' ? 'skill' : 'knowledge collection'} "${id}" in this organization` });
        }
      });
    }

    if (draft.model && !(await modelProviderExists(this.dataSource, orgId, draft.model.provider))) {
      errors.push({ path: 'model.provider', code: 'unknown_resource', message: `no model provider "${draft.model.provider}" in this organization` });
    }

    const normalized: AgentSpec = {
      instructions: draft.instructions,
      capabilities,
      resources: { knowledgeCollections: [...(draft.resources?.knowledgeCollections ?? [])], skills: [...(draft.resources?.skills ?? [])] },
      toolApproval: { ...(draft.toolApproval ?? {}) },
      toolOverrides: Object.fromEntries(Object.entries(overrides).map(([k, o]) => [k, { ...o }])),
      ...(draft.model ? { model: { ...draft.model } } : {}),
    };
    return { errors, omitted, normalized, resources };
  }
}

/**
 * The provider table belongs to runs; publish only asks whether the row exists (and, at insert,
 * holds it with `FOR KEY SHARE` so a concurrent delete waits and then sees the binding).
 */
export async function modelProviderExists(db: Pick<DataSource, 'query'>, orgId: string, providerId: string, lock = false): Promise<boolean> {
  const rows: unknown[] = await db.query(`SELECT 1 FROM model_provider WHERE org_id = $1 AND id = $2 ${lock ? 'FOR KEY SHARE' : ''}`, [orgId, providerId]);
  return rows.length > 0;
}

/** Config error paths are relative to the config object: `units` -> `capabilities[0].config.units`. */
function configPath(capabilityPath: string, relative: string): string {
  const base = `${capabilityPath}.config`;
  if (relative === '') return base;
  return relative.startsWith('[') ? `${base}${relative}` : `${base}.${relative}`;
}
