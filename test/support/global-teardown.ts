import { rmSync } from 'node:fs';
import { adminQuery } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const template = process.env.TEST_TEMPLATE_DATABASE;
  if (template && process.env.DATABASE_URL) await adminQuery(process.env.DATABASE_URL, `DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
  const dir = process.env.TEST_PGLITE_TEMPLATE_DIR;
  if (dir) rmSync(dir, { recursive: true, force: true });
}
