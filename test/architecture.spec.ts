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
    else if (entry.endsWith('.ts') && !/\.(e2e-)?spec\.ts$/.test(entry))
      out.push({ path: relative(SRC, full).split(sep).join('/'), text: readFileSync(full, 'utf8') });
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
    const sealed = /(^|\/)(tool-implementations|capability-tool\.resolver|mcp-tool\.resolver|tool-runner\.service|run-tool)$/;
    const offenders = files
      .filter((f) => !f.path.startsWith('runtime/'))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => sealed.test(i))
          .map((i) => `${f.path} imports ${i}`),
      );
    expect(offenders).toEqual([]);
  });

  it('lets only the runtime call a vendor MCP server for an agent', () => {
    // The pool is what talks to servers: the connections' own management (connect, sync) and the
    // executor's MCP resolver use it; nothing else may, or it would call a tool past the guards.
    const offenders = files
      .filter((f) => !f.path.startsWith('runtime/') && !f.path.startsWith('mcp-catalog/'))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => /mcp-client-pool\.service$/.test(i))
          .map((i) => `${f.path} imports ${i}`),
      );
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

  it("keeps imports from running upward: capabilities take no rule from another module's HTTP DTO", () => {
    // A DTO is the REST edge's shape; a limit or a pattern a capability shares with it lives in the
    // owning module's domain file (knowledge.limits.ts, common/scopes.ts), read by both.
    const offenders = files
      .filter((f) => f.path.startsWith('capabilities/') && !f.path.startsWith('capabilities/capabilities.'))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => /\.dto$/.test(i))
          .map((i) => `${f.path} imports ${i}`),
      );
    expect(offenders).toEqual([]);
  });

  it('keeps the tool policy a leaf: it imports types only', () => {
    const policy = files.find((f) => f.path === 'runtime/tool-policy.ts')!;
    expect(policy.text.match(/^import (?!type )/gm)).toBeNull();
  });

  it('lets only entry points into src/runtime/', () => {
    // The policy is a pure leaf every layer may ask; everything else in runtime/ is for entry points.
    // Agent runs are an entry point like REST and MCP: the run loop asks the executor for each tool call.
    const entryPoints = /^(tool-calls\/([a-z-]+\.(controller|module)|tool-call-sweeper\.service)\.ts|mcp\/|runs\/|runtime\/|app\.module\.ts)/;
    const offenders = files
      .filter((f) => !entryPoints.test(f.path))
      .flatMap((f) =>
        importsOf(f.text)
          .filter((i) => /\/runtime\/(?!tool-policy$|output-budget$)/.test(i))
          .map((i) => `${f.path} imports ${i}`),
      );
    expect(offenders).toEqual([]);
  });

  it('keeps SQL in repositories and src/database/ (migrations aside)', () => {
    // Files that still hold their table's SQL while they wait to become `<table>.repository.ts`
    // (docs/architecture.md, "Who owns which table"). The list only shrinks: a new file with SQL fails.
    // Empty: every table's SQL is in its repository. A file added here needs a reason beside it.
    const notYetRepositories = new Set<string>([]);
    const sql = /\.query\(|\b(SELECT\s[\s\S]*?\sFROM|INSERT\s+INTO|UPDATE\s+[a-z_]+\s+SET|DELETE\s+FROM)\s/;
    const offenders = files
      .filter((f) => !f.path.startsWith('database/') && !/\.repository\.ts$/.test(f.path) && !notYetRepositories.has(f.path))
      .filter((f) => sql.test(f.text))
      .map((f) => f.path);
    expect(offenders).toEqual([]);
    // And the allow-list names only files that still need it.
    expect([...notYetRepositories].filter((p) => !sql.test(files.find((f) => f.path === p)?.text ?? ''))).toEqual([]);
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
