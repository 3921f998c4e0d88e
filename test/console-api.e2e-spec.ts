import { readFileSync } from 'node:fs';
import { CONSOLE_SCHEMA_FILE, fetchOpenApiDocument, generateConsoleSchema } from './support/console-api';

/**
 * The console's typed client is generated from the OpenAPI document and committed. When a route or
 * a schema changes, the console must be regenerated (and so type-checked against the change)
 * in the same commit, or this fails.
 */
describe('the console API types', () => {
  let document: Record<string, unknown>;
  beforeAll(async () => {
    document = await fetchOpenApiDocument();
  }, 180_000);

  it('are what the server documents today (else: npm run console:api)', async () => {
    const generated = await generateConsoleSchema(document);
    const committed = readFileSync(CONSOLE_SCHEMA_FILE, 'utf8');
    if (generated !== committed) {
      throw new Error(`${CONSOLE_SCHEMA_FILE} is stale: run \`npm run console:api\` and commit the result.`);
    }
  }, 180_000);
});
