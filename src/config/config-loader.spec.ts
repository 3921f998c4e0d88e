import { ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP_CONFIG_KEY, loadConfig } from './config-loader';
import { AppConfig, ConfigError } from './app-config';

describe('loading the config through @nestjs/config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-loader-'));
  const envFile = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const base = { DATA_DIR: join(dir, 'data') };

  it('reads the .env file, and the process environment wins over it', async () => {
    const file = envFile('a.env', 'PORT=4321\nLOG_LEVEL=debug\nAPPROVAL_TTL_SECONDS=600\n');
    const { config } = await loadConfig({ ...base, LOG_LEVEL: 'warn' }, { envFile: file });
    expect(config.port).toBe(4321);
    expect(config.logLevel).toBe('warn');
    expect(config.approvalTtlSeconds).toBe(600);
  });

  it('refuses a bad value from the file with the same message as from the environment, naming the variable', async () => {
    const file = envFile('b.env', 'PORT=70000\n');
    await expect(loadConfig(base, { envFile: file })).rejects.toThrow(ConfigError);
    await expect(loadConfig(base, { envFile: file })).rejects.toThrow(/PORT: .*must not be greater than 65535 \(got 70000\)/);
  });

  it('starts without a file, and copies nothing into process.env', async () => {
    const before = { ...process.env };
    const { config } = await loadConfig({ ...base, PORT: '4000' }, { envFile: join(dir, 'missing.env') });
    expect(config.port).toBe(4000);
    expect(process.env).toEqual(before);
  });

  it('gives ConfigService the same typed config', async () => {
    const { config, module } = await loadConfig({ ...base, PORT: '4001' });
    const ref = await Test.createTestingModule({ imports: [module] }).compile();
    expect(ref.get(ConfigService).get<AppConfig>(APP_CONFIG_KEY)).toBe(config);
    await ref.close();
  });
});
