import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { redactSecretsDeep } from '../src/common/redact-secrets';

/**
 * CPU time of redactSecretsDeep, which every MCP tool result (up to 64 MiB) goes through before
 * anything else sees it, on results shaped like real ones and on a credential and result chosen
 * together to make a search slow. Beside it, JSON.parse of the same result (which every result
 * costs anyway). Another implementation (a file exporting redactSecretsDeep, e.g. an older
 * commit's, written out with `git show <ref>:src/common/redact-secrets.ts > /tmp/old.ts`) is
 * measured in the same rounds when given:
 *
 *   node --max-old-space-size=6000 -r @swc-node/register bench/redact-secrets.ts [/tmp/old.ts]
 */
type Redact = (value: unknown, credentials: Readonly<Record<string, string>>) => unknown;

const MiB = 1024 * 1024;
const ROUNDS = 3;
const credentials = { authorization: 'Bearer supersecret-mcp-credential-XYZ123', 'x-api-key': 'k-0123456789abcdef' };
const hostile = { authorization: 'a'.repeat(4000) + 'b' + 'a'.repeat(4000) };

const cases: { name: string; value: () => unknown; credentials: Record<string, string>; repeat: number }[] = [
  {
    name: 'small result',
    value: () => ({ content: [{ type: 'text', text: 'customer 42 is Ada' }], structuredContent: { id: '42' } }),
    credentials,
    repeat: 10_000,
  },
  { name: '64 MiB text (hex)', value: () => ({ content: [{ type: 'text', text: randomBytes(32 * MiB).toString('hex') }] }), credentials, repeat: 1 },
  {
    name: '64 MiB image (base64)',
    value: () => ({ content: [{ type: 'image', mimeType: 'image/png', data: randomBytes(48 * MiB).toString('base64') }] }),
    credentials,
    repeat: 1,
  },
  {
    name: '64 MiB prose',
    value: () => ({ content: [{ type: 'text', text: 'the quick brown fox jumps over the lazy dog, Bearer said '.repeat((64 * MiB) / 56) }] }),
    credentials,
    repeat: 1,
  },
  {
    name: '1M text items, 64 MiB',
    value: () => ({ content: Array.from({ length: MiB }, () => ({ type: 'text', text: randomBytes(32).toString('hex') })) }),
    credentials,
    repeat: 1,
  },
  {
    name: 'hostile: 8,001-char credential, 4 MiB of a',
    value: () => ({ content: [{ type: 'text', text: 'a'.repeat(4 * MiB) }] }),
    credentials: hostile,
    repeat: 1,
  },
];

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

function measure(fn: () => void, repeat: number): number {
  const start = cpuMs();
  for (let i = 0; i < repeat; i++) fn();
  return (cpuMs() - start) / repeat;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const shown = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(0)} ms`);

async function main(): Promise<void> {
  const implementations: [string, Redact][] = [['this tree', redactSecretsDeep]];
  if (process.argv[2]) implementations.push([process.argv[2], ((await import(resolve(process.argv[2]))) as { redactSecretsDeep: Redact }).redactSecretsDeep]);
  const rows: string[][] = [['result', 'JSON.parse', ...implementations.map(([name]) => name)]];
  for (const c of cases) {
    const value = c.value();
    const json = JSON.stringify(value);
    const times = implementations.map((): number[] => []);
    const parse: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      parse.push(measure(() => JSON.parse(json), c.repeat));
      implementations.forEach(([, redact], i) => times[i].push(measure(() => redact(value, c.credentials), c.repeat)));
    }
    rows.push([c.name, shown(median(parse)), ...times.map((t) => shown(median(t)))]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i])).join('  '));
}

void main();
