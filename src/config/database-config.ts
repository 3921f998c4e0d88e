import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { emptyToUndefined, toInt } from './env-transforms';
import { HttpVariables } from './http-config';

// 32 bytes are 43 base64 characters and one `=` (or 44 characters with url-safe alphabet variants).
const BASE64_32_BYTES = /^[A-Za-z0-9+/_-]{43}=?$/;

/** Where the data lives, and the key its secrets are sealed under. */
export class DatabaseVariables extends HttpVariables {
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsOptional()
  @IsString()
  @MinLength(1)
  DATA_DIR: string = './.data';

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1000)
  DATABASE_POOL_SIZE: number = 10;

  /**
   * The longest one statement of the API may run, in ms (0: no limit). A statement nobody waits for
   * any more (its tool timed out, its client left) otherwise keeps its pool connection for as long
   * as it runs; the limit also stops one the product never meant to be slow. Migrations are not
   * bound by it (they run on a connection of their own), nor is the embedded database (PGlite
   * keeps no statement timer).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3_600_000)
  DATABASE_STATEMENT_TIMEOUT_MS: number = 60_000;

  /**
   * Bytes of knowledge documents' text, titles and metadata (as JSON text) one organization may
   * store (UTF-8, as PostgreSQL counts them). Every organization writes to the same database volume: unbounded, one builder key wrote
   * a gigabyte a minute within its rate limit, and a full volume fails every organization's writes.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  KNOWLEDGE_MAX_BYTES_PER_ORG: number = DEFAULT_STORAGE_LIMITS.knowledgeBytesPerOrg;

  /**
   * Bytes of agents one organization may store: drafts and descriptions, and published versions'
   * specs and tool digests (as JSON text). Versions are kept for good; unbounded, one builder key
   * wrote 40 agents with 1 MiB drafts in 10.6 s.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  AGENTS_MAX_BYTES_PER_ORG: number = DEFAULT_STORAGE_LIMITS.agentBytesPerOrg;

  /**
   * Bytes one organization's runs and tool calls may store: runs' input, transcript and answer,
   * their events, whole results kept for offloaded calls, and calls' arguments and results past
   * 2 KB. Checked when a run starts (and before a whole result is kept); unbounded, one agent key
   * wrote about 30 MiB a second within its rate limit.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  RUNS_MAX_BYTES_PER_ORG: number = DEFAULT_STORAGE_LIMITS.runBytesPerOrg;

  /** Skills one organization may have (each up to 100,000 characters of instructions). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  SKILLS_MAX_PER_ORG: number = DEFAULT_STORAGE_LIMITS.skillsPerOrg;

  /** Knowledge collections one organization may have: each is a row of up to 8 KB that no byte bound counts. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  KNOWLEDGE_MAX_COLLECTIONS_PER_ORG: number = DEFAULT_STORAGE_LIMITS.knowledgeCollectionsPerOrg!;

  /**
   * Knowledge documents one organization may have, whatever they weigh: an empty document counts
   * 3 bytes against KNOWLEDGE_MAX_BYTES_PER_ORG but takes about 540 on the volume (row, indexes).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000_000)
  KNOWLEDGE_MAX_DOCUMENTS_PER_ORG: number = DEFAULT_STORAGE_LIMITS.knowledgeDocumentsPerOrg!;

  /**
   * Bytes one organization's agent memories may weigh: 512 a memory, its text and tags (UTF-8), and
   * 64 a word of its search index and three times the word's bytes (attack round 21, AC-F1). Unbounded, an agent kept up to its `maxMemories` (100,000) of
   * about 16 KB of the volume each, and an organization as many agents as it liked (attack round 16, T-F1).
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  MEMORY_MAX_BYTES_PER_ORG: number = DEFAULT_STORAGE_LIMITS.memoryBytesPerOrg!;

  /** 32 bytes, base64: the key secrets are sealed under (AES-256-GCM). */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(BASE64_32_BYTES, { message: 'must be 32 bytes, base64 (openssl rand -base64 32)' })
  SECRETS_KEY?: string;

  /** The key before the last rotation: what it sealed still opens. */
  @IsOptional()
  @Transform(emptyToUndefined)
  @IsString()
  @Matches(BASE64_32_BYTES, { message: 'must be 32 bytes, base64 (openssl rand -base64 32)' })
  SECRETS_KEY_PREVIOUS?: string;
}

/**
 * What one organization may store: KNOWLEDGE_MAX_BYTES_PER_ORG, AGENTS_MAX_BYTES_PER_ORG,
 * RUNS_MAX_BYTES_PER_ORG, SKILLS_MAX_PER_ORG, KNOWLEDGE_MAX_COLLECTIONS_PER_ORG, KNOWLEDGE_MAX_DOCUMENTS_PER_ORG,
 * MEMORY_MAX_BYTES_PER_ORG (the last three optional, so that a config written before them keeps its meaning with their defaults).
 */
export interface StorageLimits {
  knowledgeBytesPerOrg: number;
  agentBytesPerOrg: number;
  runBytesPerOrg: number;
  skillsPerOrg: number;
  knowledgeCollectionsPerOrg?: number;
  knowledgeDocumentsPerOrg?: number;
  memoryBytesPerOrg?: number;
}

export const DEFAULT_STORAGE_LIMITS: StorageLimits = {
  knowledgeBytesPerOrg: 1024 * 1024 * 1024,
  agentBytesPerOrg: 1024 * 1024 * 1024,
  runBytesPerOrg: 10 * 1024 * 1024 * 1024,
  skillsPerOrg: 1000,
  knowledgeCollectionsPerOrg: 1000,
  knowledgeDocumentsPerOrg: 1_000_000,
  memoryBytesPerOrg: 1024 * 1024 * 1024,
};

export interface SecretsConfig {
  /** 32 bytes: what seals new secrets. */
  key: Buffer;
  /** 32 bytes: opens what was sealed before a rotation. */
  previousKey?: Buffer;
}
