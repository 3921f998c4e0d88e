import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { checkBuiltinLayout } from './support/capability-layout';

/** The layout checker itself, on made-up source trees; the real tree is checked in capability-registry.e2e-spec.ts. */
describe('builtin capability layout checker', () => {
  let root: string;
  const write = (path: string, text = '') => {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, text);
  };
  const capability = (id: string) =>
    `import { Capability } from '../../capability.decorator';\n\n@Capability({\n  id: '${id}',\n  tools: [],\n})\nexport class X {}\n`;
  const good = (id: string) => {
    write(`capabilities/builtin/${id}/${id}.module.ts`, `export class ${id.charAt(0).toUpperCase() + id.slice(1)}CapabilityModule {}\n`);
    write(`capabilities/builtin/${id}/${id}.e2e-spec.ts`);
    write(`capabilities/builtin/${id}/${id}.capability.ts`, capability(id));
    write(`capabilities/builtin/${id}/README.md`, '# x');
  };
  const builtinModule = (...ids: string[]) =>
    write(
      'capabilities/builtin/builtin.module.ts',
      `${ids.map((id, i) => `import { M${i} } from './${id}/${id}.module';`).join('\n')}\n@Module({\n  imports: [${ids.map((_, i) => `M${i}`).join(', ')}],\n})\nexport class B {}\n`,
    );

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'layout-'));
    good('clock');
    good('memory');
    builtinModule('clock', 'memory');
    write('capabilities/capability.types.ts', '/** The provider that carries the `@Capability()` decorator. */\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('accepts a tree that follows the pattern', () => {
    expect(checkBuiltinLayout(root)).toEqual([]);
    expect(
      checkBuiltinLayout(root, [
        { id: 'clock', toolCount: 0 },
        { id: 'memory', toolCount: 0 },
      ]),
    ).toEqual([]);
  });

  it('fails on a folder without its tests, and on a module class off the naming pattern', () => {
    rmSync(join(root, 'capabilities/builtin/clock/clock.e2e-spec.ts'));
    write('capabilities/builtin/memory/memory.module.ts', 'export class MemoryModule {}\n');
    expect(checkBuiltinLayout(root)).toEqual([
      'builtin/clock/: its tests live in its folder (no *.spec.ts or *.e2e-spec.ts here)',
      'builtin/memory/memory.module.ts: the module class is named MemoryCapabilityModule',
    ]);
    write('capabilities/builtin/clock/clock.capability.spec.ts');
    write('capabilities/builtin/memory/memory.module.ts', 'export class MemoryCapabilityModule {}\n');
    expect(checkBuiltinLayout(root)).toEqual([]);
  });

  it('fails on a folder that builtin.module.ts does not import', () => {
    good('notes');
    expect(checkBuiltinLayout(root)).toEqual(['builtin/notes/: builtin.module.ts does not import its module, so the capability would silently not exist']);
    write(
      'capabilities/builtin/builtin.module.ts',
      `import { M0 } from './clock/clock.module';\nimport { M1 } from './memory/memory.module';\nimport { N } from './notes/notes.module';\n@Module({ imports: [M0, M1] })\nexport class B {}\n`,
    );
    expect(checkBuiltinLayout(root)).toEqual(['builtin/notes/: builtin.module.ts does not import its module, so the capability would silently not exist']);
  });

  it('fails on a missing module, capability file or README', () => {
    rmSync(join(root, 'capabilities/builtin/memory/README.md'));
    rmSync(join(root, 'capabilities/builtin/clock/clock.capability.ts'));
    expect(checkBuiltinLayout(root)).toEqual(['builtin/clock/: clock.capability.ts is missing', 'builtin/memory/: README.md is missing']);
  });

  it('fails on a capability file that declares another id, or none, or two', () => {
    write('capabilities/builtin/clock/clock.capability.ts', capability('time'));
    write('capabilities/builtin/memory/memory.capability.ts', 'export class Nothing {}\n');
    expect(checkBuiltinLayout(root)).toEqual([
      "builtin/clock/clock.capability.ts: must declare id 'clock' (the folder name)",
      'builtin/memory/memory.capability.ts: must carry exactly one @Capability() (found 0)',
      "builtin/memory/memory.capability.ts: must declare id 'memory' (the folder name)",
    ]);
    write('capabilities/builtin/memory/memory.capability.ts', capability('memory') + capability('memory'));
    expect(checkBuiltinLayout(root)).toContain('builtin/memory/memory.capability.ts: must carry exactly one @Capability() (found 2)');
  });

  it('fails on the decorator outside <id>.capability.ts', () => {
    write('capabilities/builtin/clock/clock.tools.ts', capability('clock'));
    write('agents/sneaky.ts', capability('sneaky'));
    write('agents/agents.service.spec.ts', capability('fixture'));
    expect(checkBuiltinLayout(root)).toEqual(
      [
        '@Capability() may only appear in capabilities/builtin/<id>/<id>.capability.ts',
        '@Capability() may only appear in capabilities/builtin/<id>/<id>.capability.ts',
      ].map((m, i) => `${['agents/sneaky.ts', 'capabilities/builtin/clock/clock.tools.ts'][i]}: ${m}`),
    );
  });

  it('fails on a badly named folder, a stray file, and a missing builtin.module.ts', () => {
    good('Bad_Name');
    write('capabilities/builtin/helpers.ts', 'export {}');
    write('capabilities/builtin/layout.spec.ts', '');
    const problems = checkBuiltinLayout(root);
    expect(problems).toContain('builtin/Bad_Name/: a folder is named after its capability id (^[a-z][a-z0-9_-]{0,63}$)');
    expect(problems).toContain('builtin/helpers.ts: only capability folders and builtin.module.ts belong in builtin/');
    expect(problems.some((p) => p.startsWith('builtin/layout.spec.ts'))).toBe(false);
    rmSync(join(root, 'capabilities/builtin/builtin.module.ts'));
    expect(checkBuiltinLayout(root)).toContain('builtin/builtin.module.ts is missing');
  });

  it('cross-checks what the registry found: tools.ts for tools, a folder per capability, a capability per folder', () => {
    expect(
      checkBuiltinLayout(root, [
        { id: 'clock', toolCount: 2 },
        { id: 'memory', toolCount: 0 },
        { id: 'ghost', toolCount: 0 },
      ]),
    ).toEqual([
      'builtin/clock/: declares tools, so clock.tools.ts is required',
      'capability "ghost" is registered by the builtin set but has no folder builtin/ghost/',
    ]);
    write('capabilities/builtin/clock/clock.tools.ts', 'export {}');
    expect(checkBuiltinLayout(root, [{ id: 'clock', toolCount: 2 }])).toEqual([
      'builtin/memory/: no capability "memory" is registered when the builtin set boots (is its module imported and its provider listed?)',
    ]);
  });
});
