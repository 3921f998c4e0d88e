import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * Builds the console from its sources into a fresh folder, so a browser test never runs against a
 * stale `dist/console` (or none). Vite takes a few seconds; call it once per test file.
 */
export function buildConsole(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'console-build-'));
  const vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
  execFileSync(process.execPath, [vite, 'build', '--config', 'console/vite.config.mts', '--outDir', dir, '--emptyOutDir', '--logLevel', 'error'], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
