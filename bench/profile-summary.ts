import { readFileSync } from 'node:fs';

/**
 * Where a server's CPU went, from the V8 CPU profiles BENCH_PROFILE leaves (one per server), by
 * package (node_modules/<name>, src/<folder>, node:<module>, V8's own entries such as the garbage
 * collector) and by function; given two profiles, side by side with the difference, largest first:
 *
 *   node -r @swc-node/register bench/profile-summary.ts <a.cpuprofile> [<b.cpuprofile>] \
 *     [--from=<s>[,<s>]] [--units=<n>[,<n>]] [--top=<n>] [--timeline]
 *
 * A profile covers the server's whole life, boot included (module loading alone can outweigh what
 * a comparison looks for): `--timeline` prints each second's busy share and the share spent loading
 * modules, and `--from` leaves out the samples before that second (one value, or one a profile).
 * `--units` divides each profile's times by what it served (the requests of the rounds and the
 * warm-up, from the benchmark's req/s), so two servers that served different numbers compare per
 * request; without it the figures are milliseconds. Self time only: a function's callees count
 * for themselves.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const files = args.filter((a) => !a.startsWith('--'));
if (files.length < 1 || files.length > 2)
  throw new Error('usage: profile-summary <a.cpuprofile> [<b.cpuprofile>] [--from=s[,s]] [--units=n[,n]] [--top=n] [--timeline]');
const perFile = (value: string | undefined, fallback: number) => {
  const parts = (value ?? '').split(',').filter(Boolean).map(Number);
  if (parts.some((n) => !Number.isFinite(n) || n < 0)) throw new Error(`not a number: ${value}`);
  return files.map((_, i) => parts[i] ?? parts[0] ?? fallback);
};
const from = perFile(option('from'), 0);
const units = perFile(option('units'), 0);
const top = Number(option('top') ?? 30);

/** Where a frame's code comes from: a package, a folder of the product, a Node module, or V8. */
function ownerOf(frame: CallFrame): string {
  const url = frame.url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const src = /\/src\/([^/]+)/.exec(url);
  if (src) return `src/${src[1]}`;
  if (url.startsWith('node:')) return url;
  if (url) return url.split('/').slice(-2).join('/');
  return `(${frame.functionName})`;
}

interface Summary {
  byOwner: Map<string, number>;
  byFunction: Map<string, number>;
  busy: number;
}

function summarize(file: string, fromSeconds: number, divideBy: number, timeline: boolean): Summary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  // Milliseconds, or milliseconds per unit turned into µs when units are given.
  const scale = divideBy > 0 ? 1 / divideBy : 1 / 1000;
  const summary: Summary = { byOwner: new Map(), byFunction: new Map(), busy: 0 };
  const seconds: { busy: number; loading: number }[] = [];
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    const frame = frames.get(profile.samples[i])!;
    const second = Math.floor(at / 1e6);
    seconds[second] ??= { busy: 0, loading: 0 };
    const idle = frame.functionName === '(idle)';
    if (!idle) seconds[second].busy += dt;
    if (frame.url.includes('modules/cjs/loader') || frame.functionName === 'wrapSafe') seconds[second].loading += dt;
    if (at < fromSeconds * 1e6 || idle) continue;
    const owner = ownerOf(frame);
    const fn = `${owner} ${frame.functionName || '(anonymous)'}:${frame.lineNumber + 1}`;
    summary.byOwner.set(owner, (summary.byOwner.get(owner) ?? 0) + dt * scale);
    summary.byFunction.set(fn, (summary.byFunction.get(fn) ?? 0) + dt * scale);
    summary.busy += dt * scale;
  }
  if (timeline) {
    const line = [...seconds].map((s, i) => `${i}s ${Math.round((s?.busy ?? 0) / 1e4)}%${s?.loading ? `/${Math.round(s.loading / 1e4)}%` : ''}`);
    process.stdout.write(`${file}: busy share each second (/ loading modules)\n${line.join('  ')}\n\n`);
  }
  return summary;
}

const summaries = files.map((f, i) => summarize(f, from[i], units[i], args.includes('--timeline')));
const unit = units[0] > 0 ? 'µs/unit' : 'ms';
const fixed = (n: number) => n.toFixed(1).padStart(10);

function table(title: string, pick: (s: Summary) => Map<string, number>): void {
  const [a, b] = summaries.map(pick);
  const keys = new Set([...a.keys(), ...(b?.keys() ?? [])]);
  const rows = [...keys].map((k) => ({ k, a: a.get(k) ?? 0, b: b?.get(k) ?? 0 }));
  rows.sort((x, y) => (b ? Math.abs(y.b - y.a) - Math.abs(x.b - x.a) : y.a - x.a));
  process.stdout.write(`${title.padEnd(72)}${b ? `${'A'.padStart(10)}${'B'.padStart(10)}${'B-A'.padStart(10)}` : unit.padStart(10)}\n`);
  for (const r of rows.slice(0, top)) process.stdout.write(`${r.k.slice(0, 71).padEnd(72)}${fixed(r.a)}${b ? `${fixed(r.b)}${fixed(r.b - r.a)}` : ''}\n`);
  process.stdout.write('\n');
}

process.stdout.write(`busy (${unit}): ${summaries.map((s) => s.busy.toFixed(1)).join(' -> ')}\n\n`);
table('by package', (s) => s.byOwner);
table('by function (self time)', (s) => s.byFunction);
