import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Measurement } from './load';
import { ROOT } from './options';

export interface Table {
  title: string;
  columns: string[];
  rows: (string | number)[][];
  /** Printed under the table: what limits the figures. */
  notes?: string[];
}

/** A fixed-width text table; numbers right-aligned. */
export function formatTable(table: Table): string {
  const cells = [table.columns, ...table.rows.map((r) => r.map(String))];
  const widths = table.columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[], header = false) => r.map((c, i) => (i === 0 || header ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  const out = [table.title, line(table.columns, true), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map((r) => line(r))];
  for (const note of table.notes ?? []) out.push(`  ${note}`);
  return out.join('\n');
}

export function printTable(table: Table): void {
  process.stdout.write('\n' + formatTable(table) + '\n\n');
}

export interface ThroughputRow {
  id: string;
  name: string;
  measurement: Measurement;
  rounds: Measurement[];
  note?: string;
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

export function throughputTable(title: string, rows: readonly ThroughputRow[]): Table {
  const first = rows[0]?.measurement.rps ?? 0;
  return {
    title,
    columns: ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'ratio', 'server CPU ms'],
    rows: rows.map((r) => [
      r.name,
      Math.round(r.measurement.rps),
      fixed(r.measurement.p50, 1),
      fixed(r.measurement.p99, 1),
      r.measurement.errors,
      first > 0 ? fixed(r.measurement.rps / first, 3) : '-',
      r.measurement.serverCpuMsPerUnit === undefined ? '-' : fixed(r.measurement.serverCpuMsPerUnit, 3),
    ]),
  };
}

/** The machine and its load: without them a figure means little. */
export function machine(): Record<string, unknown> {
  const list = cpus();
  return {
    cpus: list.length,
    cpuModel: list[0]?.model ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** bench/results/<date>.json, e.g. 2026-11-30T05-40-12Z-postgres.json. */
export function saveResults(report: Record<string, unknown>, mode: string): string {
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/:/g, '-');
  const file = join(dir, `${stamp}-${mode}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}
