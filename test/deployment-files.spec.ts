import { getMetadataStorage } from 'class-validator';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvironmentVariables } from '../src/config/app-config';

const root = join(__dirname, '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const variables = [
  ...new Set(
    getMetadataStorage()
      .getTargetValidationMetadatas(EnvironmentVariables, '', true, false)
      .map((m) => m.propertyName),
  ),
].sort();

/** The files an operator deploys from say what the code reads; a new variable cannot be forgotten. */
describe('deployment files', () => {
  it('knows the variables (sanity)', () => {
    expect(variables).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'PLATFORM_ADMIN_TOKEN', 'MCP_APPROVAL_WAIT_SECONDS']));
  });

  it('.env.example lists every variable, with its default when it has one', () => {
    const example = read('.env.example');
    const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
    const wrong = variables.filter((name) => {
      const m = new RegExp(`^(# )?${name}=(.*)$`, 'm').exec(example);
      if (!m) return true;
      return defaults[name] === undefined ? m[1] !== '# ' : m[2] !== String(defaults[name]);
    });
    expect(wrong).toEqual([]);
  });

  it('the README configuration table has a row for every variable', () => {
    const readme = read('README.md');
    expect(variables.filter((name) => !readme.includes(`| \`${name}\` |`))).toEqual([]);
  });

  it('the README links only inside the repository (and to the server it starts), each to a file that exists', () => {
    // Code (blocks and spans) is text to copy, not a link.
    const readme = read('README.md')
      .replace(/^```[\s\S]*?^```/gm, '')
      .replace(/`[^`\n]*`/g, '');
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)|<(https?:\/\/[^>]+)>|(?<![(<])\bhttps?:\/\/[^\s)>`'"]+/g)].map((m) => m[1] ?? m[2] ?? m[0]);
    const local = /^https?:\/\/(127\.0\.0\.1|localhost)(:\d+)?(\/|$)/;
    const leaving = targets.filter((t) => /^[a-z][a-z0-9+.-]*:/i.test(t) && !local.test(t));
    expect(leaving).toEqual([]);
    const missing = targets.filter((t) => !/^[a-z][a-z0-9+.-]*:|^#/i.test(t)).filter((t) => !existsSync(join(root, t.split('#')[0])));
    expect(missing).toEqual([]);
  });

  it('the Dockerfile builds in a first stage and runs production dependencies only, as a non-root user, with a health check', () => {
    const stages = read('Dockerfile')
      .split(/^FROM /m)
      .slice(1);
    expect(stages).toHaveLength(2);
    const final = stages[1];
    expect(final).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(final).toMatch(/^USER node$/m);
    expect(final).toMatch(/^HEALTHCHECK .*\n?.*\/health\/ready/m);
    expect(final).toMatch(/^CMD \["node", "dist\/src\/main\.js"\]$/m);
    expect(stages[0]).toMatch(/^RUN npm run build$/m);
  });

  it('compose.yaml requires the secrets instead of defaulting them', () => {
    const compose = read('compose.yaml');
    for (const name of ['POSTGRES_PASSWORD', 'PLATFORM_ADMIN_TOKEN', 'SECRETS_KEY']) expect(compose).toContain(`\${${name}:?`);
  });
});
