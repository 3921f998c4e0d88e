import { canonicalize } from 'json-canonicalize';
import { createHash } from 'node:crypto';
import { canonicalJson } from '../src/agents/canonical-json';
import { textHash } from '../src/agents/digests';
import { callFingerprint } from '../src/runtime/call-fingerprint';

/**
 * CPU time of RFC 8785 canonical JSON: `json-canonicalize`, which every keyed tool call's arguments
 * went through twice (its idempotency key, then its arguments' hash), beside `canonicalJson` and a
 * keyed call as the executor now hashes it (once). Arguments shaped as attack round 13's K-F7 sent
 * them (1.7 MB of keys, of numbers) and as real ones; JSON.parse of the same text beside them,
 * which every call costs anyway. Median of interleaved rounds:
 *
 *   node -r @swc-node/register bench/canonical-json.ts
 */
const ROUNDS = 7;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const wide: Record<string, number> = {};
for (let i = 0; i < 150_000; i++) wide[`k${((i * 7919) % 150_000).toString(36)}x`] = i;
const cases: { name: string; value: unknown; repeat: number }[] = [
  { name: 'small arguments', value: { query: 'invoices for ACME', limit: 20, filters: { status: ['open', 'overdue'], since: '2026-01-01' } }, repeat: 20_000 },
  { name: '150,000 keys', value: wide, repeat: 1 },
  { name: '400,000 numbers', value: Array.from({ length: 400_000 }, (_, i) => i * 1.5), repeat: 1 },
  {
    name: '30,000 records',
    value: Array.from({ length: 30_000 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'], price: i / 3, ok: i % 2 === 0 })),
    repeat: 1,
  },
  { name: '20,000 numeric keys', value: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [String(i), { n: i }])), repeat: 1 },
];

function cpuMs(run: () => void, repeat: number): number {
  const start = process.cpuUsage();
  for (let i = 0; i < repeat; i++) run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / repeat;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log('| arguments | JSON text | JSON.parse | json-canonicalize | canonicalJson | ratio | keyed call before | keyed call now | ratio |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const { name, value: raw, repeat } of cases) {
  const text = JSON.stringify(raw);
  const value: unknown = JSON.parse(text);
  if (canonicalJson(value) !== canonicalize(value)) throw new Error(`${name}: canonicalJson differs from json-canonicalize`);
  const call = { agentId: 'a0', tool: 'search', arguments: value, version: 'latest' as const, runId: null };
  const times = { parse: [] as number[], lib: [] as number[], now: [] as number[], before: [] as number[], after: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    times.parse.push(cpuMs(() => JSON.parse(text), repeat));
    times.lib.push(cpuMs(() => canonicalize(value), repeat));
    times.now.push(cpuMs(() => canonicalJson(value), repeat));
    times.before.push(cpuMs(() => (sha256(canonicalize(call)), sha256(canonicalize(value))), repeat));
    times.after.push(cpuMs(() => textHash(callFingerprint(call)!.argumentsText), repeat));
  }
  const [parse, lib, now, before, after] = [times.parse, times.lib, times.now, times.before, times.after].map(median);
  const f = (ms: number) => (ms < 1 ? `${(ms * 1000).toFixed(1)} µs` : `${ms.toFixed(1)} ms`);
  console.log(
    `| ${name} | ${(text.length / 1e6).toFixed(2)} MB | ${f(parse)} | ${f(lib)} | ${f(now)} | **${(lib / now).toFixed(1)}x** | ${f(before)} | ${f(after)} | **${(before / after).toFixed(1)}x** |`,
  );
}
