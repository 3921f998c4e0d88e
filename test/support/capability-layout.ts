import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { CAPABILITY_ID_PATTERN } from '../../src/capabilities/capability-definition';

export interface LayoutCapability {
  id: string;
  toolCount: number;
}

/** Files allowed directly in builtin/ besides the capability folders. */
const BUILTIN_FILES = /^(builtin\.module\.ts|README\.md|[a-z0-9-]+(\.[a-z0-9-]+)*\.spec\.ts)$/;
const DECORATOR_USE = /^\s*@Capability\(/m;

/**
 * The layout rules of DESIGN.md ("Capabilities as Nest modules"), checked on the source tree:
 * a capability that breaks them could vanish silently (a folder never imported) or hide its
 * declaration where reviewers do not look (the decorator outside `<id>.capability.ts`).
 * `registered` is what the registry found when booting the builtin set; pass `undefined` to
 * check the files alone.
 */
export function checkBuiltinLayout(srcDir: string, registered?: LayoutCapability[]): string[] {
  const builtinDir = join(srcDir, 'capabilities', 'builtin');
  const problems: string[] = [];
  const folders: string[] = [];

  for (const entry of readdirSync(builtinDir).sort()) {
    const path = join(builtinDir, entry);
    if (!statSync(path).isDirectory()) {
      if (!BUILTIN_FILES.test(entry)) problems.push(`builtin/${entry}: only capability folders and builtin.module.ts belong in builtin/`);
      continue;
    }
    folders.push(entry);
    if (!CAPABILITY_ID_PATTERN.test(entry)) problems.push(`builtin/${entry}/: a folder is named after its capability id (${CAPABILITY_ID_PATTERN.source})`);
    for (const file of [`${entry}.module.ts`, `${entry}.capability.ts`, 'README.md']) {
      if (!existsSync(join(path, file))) problems.push(`builtin/${entry}/: ${file} is missing`);
    }
    const moduleFile = join(path, `${entry}.module.ts`);
    const moduleClass = `${pascal(entry)}CapabilityModule`;
    if (existsSync(moduleFile) && !new RegExp(`export class ${moduleClass}\\b`).test(readFileSync(moduleFile, 'utf8')))
      problems.push(`builtin/${entry}/${entry}.module.ts: the module class is named ${moduleClass}`);
    if (!readdirSync(path).some((f) => /\.(e2e-)?spec\.ts$/.test(f)))
      problems.push(`builtin/${entry}/: its tests live in its folder (no *.spec.ts or *.e2e-spec.ts here)`);
    const capabilityFile = join(path, `${entry}.capability.ts`);
    if (existsSync(capabilityFile)) {
      const source = readFileSync(capabilityFile, 'utf8');
      const uses = source.match(new RegExp(DECORATOR_USE.source, 'gm'))?.length ?? 0;
      if (uses !== 1) problems.push(`builtin/${entry}/${entry}.capability.ts: must carry exactly one @Capability() (found ${uses})`);
      if (!new RegExp(`\\bid:\\s*['"\`]${escape(entry)}['"\`]`).test(source))
        problems.push(`builtin/${entry}/${entry}.capability.ts: must declare id '${entry}' (the folder name)`);
    }
    const declared = registered?.find((c) => c.id === entry);
    if (declared && declared.toolCount > 0 && !existsSync(join(path, `${entry}.tools.ts`))) {
      problems.push(`builtin/${entry}/: declares tools, so ${entry}.tools.ts is required`);
    }
  }

  problems.push(...checkImports(builtinDir, folders));

  for (const file of walk(srcDir)) {
    const rel = relative(srcDir, file).split(sep).join('/');
    const m = /^capabilities\/builtin\/([^/]+)\/([^/]+)\.capability\.ts$/.exec(rel);
    // Tests may declare fixture capabilities; the rule is about what ships.
    if ((m && m[1] === m[2]) || /\.(e2e-)?spec\.ts$/.test(rel)) continue;
    if (DECORATOR_USE.test(readFileSync(file, 'utf8'))) problems.push(`${rel}: @Capability() may only appear in capabilities/builtin/<id>/<id>.capability.ts`);
  }

  if (registered) {
    for (const { id } of registered) {
      if (!folders.includes(id)) problems.push(`capability "${id}" is registered by the builtin set but has no folder builtin/${id}/`);
    }
    for (const folder of folders) {
      if (!registered.some((c) => c.id === folder))
        problems.push(
          `builtin/${folder}/: no capability "${folder}" is registered when the builtin set boots (is its module imported and its provider listed?)`,
        );
    }
  }
  return problems;
}

/** builtin.module.ts must import `./<id>/<id>.module` for every folder and list the imported module class. */
function checkImports(builtinDir: string, folders: string[]): string[] {
  const file = join(builtinDir, 'builtin.module.ts');
  if (!existsSync(file)) return ['builtin/builtin.module.ts is missing'];
  const source = readFileSync(file, 'utf8');
  const listed = /imports:\s*\[([^\]]*)\]/.exec(source)?.[1] ?? '';
  const problems: string[] = [];
  for (const folder of folders) {
    const imported = new RegExp(`import\\s*\\{([^}]*)\\}\\s*from\\s*['"]\\./${escape(folder)}/${escape(folder)}\\.module['"]`).exec(source);
    const names = imported
      ? imported[1]
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean)
      : [];
    if (!names.some((n) => new RegExp(`\\b${n}\\b`).test(listed))) {
      problems.push(`builtin/${folder}/: builtin.module.ts does not import its module, so the capability would silently not exist`);
    }
  }
  return problems;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return walk(path);
    return entry.endsWith('.ts') ? [path] : [];
  });
}

/** `memory-write` → `MemoryWrite`. */
function pascal(id: string): string {
  return id
    .split(/[-_]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
