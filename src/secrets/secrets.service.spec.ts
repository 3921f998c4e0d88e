import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testConfig } from '../../test/support/test-app';
import { ConfigError } from '../config/app-config';
import { resolveConfig } from '../config/resolve-config';
import { keyId, SecretOpenError, SecretsService } from './secrets.service';

const service = (key: Buffer, previousKey?: Buffer) => new SecretsService(testConfig({ secrets: { key, previousKey } }));

describe('SecretsService', () => {
  const key = randomBytes(32);

  it('seals and opens, never showing the plaintext in the sealed form', () => {
    const secrets = service(key);
    const sealed = secrets.seal('Bearer sk-live-123 é 🙂');
    expect(sealed).not.toContain('sk-live');
    expect(sealed.startsWith(`v1.${keyId(key)}.`)).toBe(true);
    expect(secrets.open(sealed)).toBe('Bearer sk-live-123 é 🙂');
    expect(secrets.open(secrets.seal(''))).toBe('');
  });

  it('seals the same value differently each time (a fresh IV)', () => {
    const secrets = service(key);
    expect(secrets.seal('x')).not.toBe(secrets.seal('x'));
  });

  it('refuses a tampered value, another key, a truncated or foreign value', () => {
    const secrets = service(key);
    const sealed = secrets.seal('secret');
    const payload = Buffer.from(sealed.split('.')[2], 'base64url');
    payload[14] ^= 1;
    expect(() => secrets.open(`v1.${keyId(key)}.${payload.toString('base64url')}`)).toThrow(SecretOpenError);
    // The key id says which key sealed it; relabelling it as the other key's does not help.
    const other = randomBytes(32);
    expect(() => service(other).open(sealed)).toThrow(/neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS/);
    expect(() => service(other, key).open(sealed.replace(keyId(key), keyId(other)))).toThrow(SecretOpenError);
    expect(() => secrets.open(`v1.${keyId(key)}.AAAA`)).toThrow(/truncated/);
    expect(() => secrets.open('plain text')).toThrow(SecretOpenError);
    expect(() => secrets.open('v2.x.y')).toThrow(SecretOpenError);
  });

  it('rotation: what the previous key sealed opens under SECRETS_KEY_PREVIOUS, new values use the new key', () => {
    const before = service(key);
    const old = before.seal('old secret');
    const next = randomBytes(32);
    const after = service(next, key);
    expect(after.open(old)).toBe('old secret');
    expect(after.needsReseal(old)).toBe(true);
    const fresh = after.seal('new secret');
    expect(after.needsReseal(fresh)).toBe(false);
    expect(fresh.split('.')[1]).toBe(keyId(next));
    // Once the previous key is dropped, the old value no longer opens; the new one does.
    expect(() => service(next).open(old)).toThrow(SecretOpenError);
    expect(service(next).open(fresh)).toBe('new secret');
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => service(randomBytes(16))).toThrow(/32 bytes/);
    expect(() => service(key, randomBytes(31))).toThrow(/32 bytes/);
  });
});

describe('SECRETS_KEY in the environment', () => {
  const token = 'x'.repeat(20);

  it('with the embedded database and no key: generates one into DATA_DIR/secrets-key (0600) and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    const first = resolveConfig({ DATA_DIR: dir, PLATFORM_ADMIN_TOKEN: token });
    const path = join(dir, 'secrets-key');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(first.secrets.key).toHaveLength(32);
    expect(Buffer.from(readFileSync(path, 'utf8').trim(), 'base64').equals(first.secrets.key)).toBe(true);
    expect(resolveConfig({ DATA_DIR: dir, PLATFORM_ADMIN_TOKEN: token }).secrets.key.equals(first.secrets.key)).toBe(true);
  });

  it('refuses a key file that holds no key rather than replacing it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    writeFileSync(join(dir, 'secrets-key'), 'short\n');
    expect(() => resolveConfig({ DATA_DIR: dir, PLATFORM_ADMIN_TOKEN: token })).toThrow(/no usable secrets key/);
  });

  it('with DATABASE_URL and no key: refuses to start, naming SECRETS_KEY', () => {
    expect(() => resolveConfig({ DATABASE_URL: 'postgres://u@h/db', PLATFORM_ADMIN_TOKEN: token })).toThrow(ConfigError);
    expect(() => resolveConfig({ DATABASE_URL: 'postgres://u@h/db', PLATFORM_ADMIN_TOKEN: token })).toThrow(/SECRETS_KEY must be set/);
  });

  it('takes SECRETS_KEY and SECRETS_KEY_PREVIOUS as base64 of 32 bytes', () => {
    const key = randomBytes(32);
    const previous = randomBytes(32);
    const config = resolveConfig({
      DATABASE_URL: 'postgres://u@h/db',
      PLATFORM_ADMIN_TOKEN: token,
      SECRETS_KEY: key.toString('base64'),
      SECRETS_KEY_PREVIOUS: previous.toString('base64url'),
    });
    expect(config.secrets.key.equals(key)).toBe(true);
    expect(config.secrets.previousKey!.equals(previous)).toBe(true);
  });

  it.each([
    ['SECRETS_KEY', 'c2hvcnQ='],
    ['SECRETS_KEY', '!'.repeat(44)],
    ['SECRETS_KEY_PREVIOUS', randomBytes(24).toString('base64')],
  ])('refuses %s=%s, naming it', (name, value) => {
    const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    expect(() => resolveConfig({ DATA_DIR: dir, PLATFORM_ADMIN_TOKEN: token, [name]: value })).toThrow(new RegExp(`${name}:`));
  });
});
