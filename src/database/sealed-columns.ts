/**
 * Every column that holds a value sealed by SecretsService (`v1.<key id>.<payload>`), in one
 * place: the re-seal pass (reseal-secrets.ts) walks exactly these, so a sealed column missing here
 * would stay under an old SECRETS_KEY for good. test/secrets-rotation.e2e-spec.ts fails when the
 * migrated schema has a `*_sealed` column this list lacks; a sealed column named otherwise (like
 * `mcp_connection.credentials`) must be added by hand.
 *
 * Each table has `id` as its primary key; names come from here, never from a request.
 */
export const SEALED_COLUMNS = [
  { table: 'mcp_connection', column: 'credentials', holds: "MCP connections' credentials" },
  { table: 'mcp_connection', column: 'url_sealed', holds: "MCP connections' URLs" },
  { table: 'model_provider', column: 'api_key_sealed', holds: "model providers' API keys" },
  { table: 'webhook_endpoint', column: 'secret_sealed', holds: "webhooks' signing secrets" },
  { table: 'webhook_endpoint', column: 'previous_secret_sealed', holds: "webhooks' previous signing secrets, kept while a rotation overlaps" },
  { table: 'webhook_endpoint', column: 'url_sealed', holds: "webhooks' URLs" },
] as const;

export type SealedColumn = (typeof SEALED_COLUMNS)[number];
