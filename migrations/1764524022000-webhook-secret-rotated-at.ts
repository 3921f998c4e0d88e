import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When an endpoint's signing secret was last replaced (null: never since it was created): shown
 * with the endpoint, and what a rotation may be made conditional on (`ifSecretRotatedAt`), so two
 * admins rotating at once cannot each be told the secret that the other's rotation retires.
 */
export class WebhookSecretRotatedAt1764524022000 implements MigrationInterface {
  name = 'WebhookSecretRotatedAt1764524022000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoint ADD COLUMN IF NOT EXISTS secret_rotated_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_endpoint DROP COLUMN IF EXISTS secret_rotated_at`);
  }
}
