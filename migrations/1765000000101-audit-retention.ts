import { MigrationInterface, QueryRunner } from 'typeorm';

const APPEND_ONLY = `BEGIN
        RAISE EXCEPTION 'audit_event is append-only';
      END`;

/**
 * AUDIT_RETENTION_DAYS (src/audit/audit-retention.service.ts): the table that refused every change
 * and removal now lets a transaction remove an event older than the retention it names
 * (`audit.retention_days`, set for that transaction only), and nothing younger: the sweep cannot
 * remove a recent event whatever its code says, and changing an event stays refused. Without the
 * setting nothing is removed, as before (attack round 19, Z-N1: the log was written at each key's
 * rate limit and never trimmed).
 */
const RETAINED = `DECLARE
        days integer := nullif(current_setting('audit.retention_days', true), '')::integer;
      BEGIN
        IF TG_OP = 'DELETE' AND days >= 1 AND OLD.at < now() - make_interval(days => days) THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit_event is append-only';
      END`;

export class AuditRetention1765000000101 implements MigrationInterface {
  name = 'AuditRetention1765000000101';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ ${RETAINED} $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE OR REPLACE FUNCTION audit_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ ${APPEND_ONLY} $$`);
  }
}
