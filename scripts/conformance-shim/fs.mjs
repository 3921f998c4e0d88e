// node:fs with the one function Node 20 lacks. The CLI uses globSync only as `**/<file name>`
// (finding result files); other patterns are refused rather than answered wrongly.
import fs from 'node:fs';
import { basename, join } from 'node:path';

export * from 'node:fs';
export default fs;

export function globSync(pattern, options = {}) {
  const m = /^\*\*\/([^*?[\]{}/]+)$/.exec(pattern);
  if (!m) throw new Error(`globSync shim: unsupported pattern ${pattern}`);
  const cwd = options.cwd ?? process.cwd();
  return fs
    .readdirSync(cwd, { recursive: true })
    .map(String)
    .filter((p) => basename(p) === m[1] && fs.statSync(join(cwd, p)).isFile());
}
