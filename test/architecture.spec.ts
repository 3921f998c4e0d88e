import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/**
 * The structure DESIGN.md asks for, checked on the source tree, so that it holds by construction
 * and not by review. Each rule names the files that break it.
 */
const SRC = join(__dirname, '..', 'src');

function sources(dir = SRC): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  for (const entry of readdirSync(dir)) {
    const full = join(dir, entry);
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (entry.endsWith('.ts') && !entry.endsWith('.spec.ts')) out.push({ path: relative(SRC, full).split(sep).join('/'), text: readFileSync(full, 'utf8') });
  }
  return out;
}

/** The module specifiers a file imports (static imports and re-exports). */
function importsOf(text: string): string[] {
  return [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]);
}

describe('the architecture', () => {
  const files = sources();

  it('seals execution: only src/runtime/ reaches what runs a tool', () => {
    // What turns an offered tool into code that runs, and the runner itself.
    const sealed = /(^|\/)(tool-implementations|capability-tool\.resolver|tool-runner\.service|run-tool)$/;
    const offenders = files
      .filter((f) => !f.path.startsWith('runtime/'))
      .flatMap((f) => importsOf(f.text).filter((i) => sealed.test(i)).map((i) => `${f.path} imports ${i}`));
    expect(offenders).toEqual([]);
  });

  it('builds capabilities only in the composer, and lets only the runtime take their contributions', () => {
    const builds = files.filter((f) => /\bregistry\.build\(/.test(f.text)).map((f) => f.path);
    expect(builds).toEqual(['agents/version-composer.service.ts']);
    // Passing a ContributionSink to a build is how implementations are reached.
    const sinks = files
      .filter((f) => /\.build\([^)]*,\s*\(c\)\s*=>/.test(f.text) || /\bContributionSink\b/.test(f.text))
      .map((f) => f.path)
      .filter((p) => !p.startsWith('runtime/') && !['agents/version-composer.service.ts', 'agents/version-builder.service.ts'].includes(p));
    expect(sinks).toEqual([]);
  });

  it('keeps the tool policy a leaf: it imports types only', () => {
    const policy = files.find((f) => f.path === 'runtime/tool-policy.ts')!;
    expect(policy.text.match(/^import (?!type )/gm)).toBeNull();
  });

  it('lets only entry points into src/runtime/', () => {
    // The policy is a pure leaf every layer may ask; everything else in runtime/ is for entry points.
    const entryPoints = /^(tool-calls\/([a-z-]+\.(controller|module)|tool-call-sweeper\.service)\.ts|mcp\/|runtime\/|app\.module\.ts)/;
    const offenders = files
      .filter((f) => !entryPoints.test(f.path))
      .flatMap((f) => importsOf(f.text).filter((i) => /\/runtime\/(?!tool-policy$|output-budget$)/.test(i)).map((i) => `${f.path} imports ${i}`));
    expect(offenders).toEqual([]);
  });

  it('maps every error code to its status in one table', () => {
    const direct = files.filter((f) => /new ApiError\(\s*\d/.test(f.text)).map((f) => f.path);
    expect(direct).toEqual([]);
  });

  it('keeps files short enough to hold in mind, or says why at the top', () => {
    const long = files.filter((f) => f.text.split('\n').length > 320 && !/^\/\/ Longer than 300 lines because/m.test(f.text)).map((f) => f.path);
    expect(long).toEqual([]);
  });
});
