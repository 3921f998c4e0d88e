import { Inject, Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config/app-config';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Opening failed: wrong key, a tampered or truncated value. Never carries the value itself. */
export class SecretOpenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretOpenError';
  }
}

/** 8 hex characters of the key's SHA-256: names which key sealed a value, reveals nothing of it. */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/**
 * Seals secrets at rest with AES-256-GCM under SECRETS_KEY. A sealed value reads
 * `v1.<key id>.<base64url(iv | ciphertext | tag)>`: the key id lets a value sealed before a
 * rotation be opened with SECRETS_KEY_PREVIOUS, and lets an operator find (by key id) what still
 * needs re-sealing before the previous key is dropped.
 */
@Injectable()
export class SecretsService {
  private readonly keys: Map<string, Buffer>;
  private readonly currentId: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    const { key, previousKey } = config.secrets;
    if (key.length !== 32) throw new Error('SECRETS_KEY must be 32 bytes');
    this.currentId = keyId(key);
    this.keys = new Map([[this.currentId, key]]);
    if (previousKey) {
      if (previousKey.length !== 32) throw new Error('SECRETS_KEY_PREVIOUS must be 32 bytes');
      if (!this.keys.has(keyId(previousKey))) this.keys.set(keyId(previousKey), previousKey);
    }
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentId)!, iv);
    cipher.setAAD(Buffer.from(`${VERSION}.${this.currentId}`));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}.${this.currentId}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) throw new SecretOpenError('not a sealed secret');
    const [, id, payload] = parts;
    const key = this.keys.get(id);
    if (!key) throw new SecretOpenError(`sealed under key ${id}, which is neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS`);
    const raw = Buffer.from(payload, 'base64url');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretOpenError('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`${VERSION}.${id}`));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretOpenError(`sealed secret does not authenticate under key ${id} (tampered or corrupted)`);
    }
  }

  /** The key id new values are sealed under (SECRETS_KEY's). */
  get currentKeyId(): string {
    return this.currentId;
  }

  /** Whether this node holds the key `id` names (SECRETS_KEY or SECRETS_KEY_PREVIOUS). */
  holds(id: string): boolean {
    return this.keys.has(id);
  }

  /** True when the value was sealed under another key than SECRETS_KEY and should be sealed again. */
  needsReseal(sealed: string): boolean {
    return sealed.split('.')[1] !== this.currentId;
  }
}
