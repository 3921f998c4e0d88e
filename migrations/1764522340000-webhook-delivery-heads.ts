import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The pending deliveries by organization and endpoint, oldest first: the dispatcher's claim walks
 * it one endpoint at a time to find each endpoint's next delivery (and steps over an organization
 * at its share of the node whole), so that organizations are served in turn at a cost that grows
 * with the endpoints waiting, not with their backlog. Oldest first across organizations let a few
 * organizations whose receivers hang delay every other organization's deliveries by minutes.
 */
export class WebhookDeliveryHeads1764522340000 implements MigrationInterface {
  name = 'WebhookDeliveryHeads1764522340000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX webhook_delivery_heads_idx ON webhook_delivery (org_id, endpoint_id, next_attempt_at) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX webhook_delivery_heads_idx`);
  }
}
