import type { Client } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * PostgreSQL's LISTEN / NOTIFY, for nodes that wake each other (src/events/event-wakeups.service.ts).
 * The channel is a fixed identifier of ours, never input: LISTEN takes no parameter.
 */
export async function notify(db: Pick<DataSource, 'query'>, channel: string, payload: string): Promise<void> {
  await db.query(`SELECT pg_notify($1, $2)`, [channel, payload]);
}

export async function listen(client: Pick<Client, 'query'>, channel: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  await client.query(`LISTEN ${channel}`);
}
