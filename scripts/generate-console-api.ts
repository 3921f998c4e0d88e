import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { CONSOLE_SCHEMA_FILE, fetchOpenApiDocument, generateConsoleSchema } from '../test/support/console-api';

/** Boots the application on a throwaway database, reads its OpenAPI document and rewrites the console's API types. */
async function main(): Promise<void> {
  const schema = await generateConsoleSchema(await fetchOpenApiDocument());
  writeFileSync(CONSOLE_SCHEMA_FILE, schema);
  process.stdout.write(`wrote ${CONSOLE_SCHEMA_FILE}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
