import type { DataSource } from 'typeorm';
import type { SecretsService } from '../secrets/secrets.service';
import { SEALED_COLUMNS, SealedColumn } from './sealed-columns';

/** Rows read (and written, in one statement) at a time. */
const BATCH = 100;

export interface ResealReport {
  /** Values opened and sealed again under SECRETS_KEY by this pass. */
  resealed: number;
  /** Values still under another key after the pass, by column and key id. */
  remaining: { table: string; column: string; keyId: string; count: number; held: boolean }[];
}

/**
 * Seals again under SECRETS_KEY every value of every sealed column that another key sealed
 * (finishing a rotation: until then SECRETS_KEY_PREVIOUS cannot be dropped). A value whose key
 * this node does not hold, or that does not open, is left as it is and counted as remaining.
 *
 * Each batch is one UPDATE that changes a row only while it still holds the value read (compare
 * and set): a writer that replaced it meanwhile wins (its value is sealed under a current key
 * anyway), several nodes running this at once re-seal each value once, and a value is either
 * the old one or the new one, never anything between.
 */
export async function resealSecrets(db: DataSource, secrets: Pick<SecretsService, 'currentKeyId' | 'holds' | 'open' | 'seal'>): Promise<ResealReport> {
  let resealed = 0;
  for (const c of SEALED_COLUMNS) resealed += await resealColumn(db, secrets, c);
  return { resealed, remaining: await remainingUnderOtherKeys(db, secrets) };
}

async function resealColumn(db: DataSource, secrets: Pick<SecretsService, 'currentKeyId' | 'holds' | 'open' | 'seal'>, c: SealedColumn): Promise<number> {
  let resealed = 0;
  // Keyset by id: values that stay (a key not held) are passed over, not read again for ever.
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows: { id: string; value: string }[] = await db.query(
      `SELECT id, ${c.column} AS value FROM ${c.table}
        WHERE ${c.column} IS NOT NULL AND split_part(${c.column}, '.', 2) <> $1 AND id > $2
        ORDER BY id LIMIT ${BATCH}`,
      [secrets.currentKeyId, after],
    );
    if (rows.length === 0) return resealed;
    after = rows[rows.length - 1].id;
    const ids: string[] = [];
    const olds: string[] = [];
    const news: string[] = [];
    for (const r of rows) {
      if (!secrets.holds(r.value.split('.')[1] ?? '')) continue;
      let plain: string;
      try {
        plain = secrets.open(r.value);
      } catch {
        continue; // tampered or corrupted: counted as remaining, reported by key id
      }
      ids.push(r.id);
      olds.push(r.value);
      news.push(secrets.seal(plain));
    }
    if (ids.length > 0) {
      const [changed]: [unknown[], number] = await db.query(
        `UPDATE ${c.table} t SET ${c.column} = v.new
           FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, old, new)
          WHERE t.id = v.id AND t.${c.column} = v.old RETURNING t.id`,
        [ids, olds, news],
      );
      resealed += changed.length;
    }
    if (rows.length < BATCH) return resealed;
  }
}

export async function remainingUnderOtherKeys(db: DataSource, secrets: Pick<SecretsService, 'currentKeyId' | 'holds'>): Promise<ResealReport['remaining']> {
  const remaining: ResealReport['remaining'] = [];
  for (const c of SEALED_COLUMNS) {
    const rows: { key_id: string; n: string }[] = await db.query(
      `SELECT split_part(${c.column}, '.', 2) AS key_id, count(*) AS n FROM ${c.table}
        WHERE ${c.column} IS NOT NULL AND split_part(${c.column}, '.', 2) <> $1 GROUP BY 1 ORDER BY 1`,
      [secrets.currentKeyId],
    );
    for (const r of rows) remaining.push({ table: c.table, column: c.column, keyId: r.key_id, count: Number(r.n), held: secrets.holds(r.key_id) });
  }
  return remaining;
}

/** One line for the log and the command: what was done, and what is left under which key. */
export function describeReseal(report: ResealReport, currentKeyId: string): string {
  const unheld = report.remaining.filter((r) => !r.held).reduce((n, r) => n + r.count, 0);
  const corrupted = report.remaining.filter((r) => r.held).reduce((n, r) => n + r.count, 0);
  let line = `re-sealed ${report.resealed} values under SECRETS_KEY (key ${currentKeyId}); ${unheld} remain under a key this node does not hold`;
  if (corrupted > 0) line += `; ${corrupted} under a key it holds do not open (tampered or corrupted)`;
  if (report.remaining.length === 0) return line;
  return `${line}: ${report.remaining.map((r) => `${r.table}.${r.column}: ${r.count} under key ${r.keyId}`).join('; ')}`;
}

/** Values still not under SECRETS_KEY after a pass. */
export function remainingCount(report: ResealReport): number {
  return report.remaining.reduce((n, r) => n + r.count, 0);
}
