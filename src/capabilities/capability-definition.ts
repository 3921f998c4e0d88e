import { SCOPE_PATTERN } from '../common/scopes';
import { CapabilityDefinition, TOOL_NAME_PATTERN, TOOL_RISKS } from './capability.types';

/** Capability ids appear in specs, paths and settings keys; folder names follow them. */
export const CAPABILITY_ID_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * The checks a single declaration must pass, whatever the others say. Types already forbid most
 * of these; the checks exist because the declaration is the security boundary (an undeclared
 * risk must never default to read-only) and decorators are easy to get subtly wrong.
 */
export function checkDefinition(definition: CapabilityDefinition, culprit: string): string[] {
  const problems: string[] = [];
  const d = definition as Partial<Record<keyof CapabilityDefinition, unknown>>;
  const fail = (message: string) => problems.push(`${culprit}: ${message}`);

  if (typeof d.id !== 'string' || !CAPABILITY_ID_PATTERN.test(d.id)) fail(`id must match ${CAPABILITY_ID_PATTERN.source}`);
  for (const field of ['name', 'category', 'description'] as const) {
    if (!nonEmpty(d[field])) fail(`${field} must be a non-empty string`);
  }
  if (d.promptGuidance !== undefined && typeof d.promptGuidance !== 'string') fail('promptGuidance must be a string');
  if (d.configSchema !== undefined && typeof d.configSchema !== 'function') fail('configSchema must be a class');
  for (const field of ['tags', 'profiles', 'workerTypes'] as const) {
    if (!optionalList(d[field], nonEmpty)) fail(`${field} must be an array of non-empty strings`);
  }
  if (!optionalList(d.scopes, (s) => typeof s === 'string' && SCOPE_PATTERN.test(s)))
    fail(`scopes must be an array of scopes matching ${SCOPE_PATTERN.source}`);

  if (!Array.isArray(d.tools)) {
    fail('tools must be an array ([] for a capability without tools)');
    return problems;
  }
  d.tools.forEach((tool: Record<string, unknown>, i: number) => {
    const name = typeof tool?.id === 'string' ? `tool "${tool.id}"` : `tools[${i}]`;
    if (typeof tool?.id !== 'string' || !TOOL_NAME_PATTERN.test(tool.id))
      fail(`${name}: id must match ${TOOL_NAME_PATTERN.source} (what a model accepts as a tool name)`);
    if (!nonEmpty(tool?.description)) fail(`${name}: description must be a non-empty string (it is what the model reads)`);
    if (!(TOOL_RISKS as readonly unknown[]).includes(tool?.risk)) fail(`${name}: risk must be one of ${TOOL_RISKS.join(', ')}`);
    if (typeof tool?.input !== 'function') fail(`${name}: input must be a class-validator class`);
    for (const flag of ['interruptBefore', 'offloadLargeResults']) {
      if (tool?.[flag] !== undefined && typeof tool[flag] !== 'boolean') fail(`${name}: ${flag} must be a boolean`);
    }
    const max = tool?.maxOutputTokens;
    if (max !== undefined && !(Number.isSafeInteger(max) && (max as number) >= 0)) fail(`${name}: maxOutputTokens must be an integer >= 0 (0 = no limit)`);
  });
  return problems;
}

function nonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value.trim().length > 0;
}

function optionalList(value: unknown, each: (item: unknown) => boolean): boolean {
  return value === undefined || (Array.isArray(value) && value.every(each));
}
