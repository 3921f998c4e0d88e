import { DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { AppConfig } from './app-config';
import { resolveConfig } from './resolve-config';

/** Where the typed config sits in `ConfigService` (`config.get(APP_CONFIG_KEY)`). */
export const APP_CONFIG_KEY = 'app';

export interface LoadedConfig {
  config: AppConfig;
  /** `@nestjs/config`'s module, global, holding the same config for `ConfigService`. */
  module: DynamicModule;
}

/**
 * The environment through `@nestjs/config`: it reads the `.env` file (what `.env.example` is
 * copied to) and our own validation (`parseEnvironment`, which names every bad variable) turns
 * it into the one typed config. The process's own variables win over the file, as with every
 * dotenv tool, so a deployment's settings are never overridden by a file left in the directory.
 *
 * `validatePredefined: false` and `skipProcessEnv` because the variables are the `env` passed in (a
 * test harness passes its own), not necessarily `process.env`; the validated value is an object under one key, so
 * `@nestjs/config` copies nothing back into `process.env`.
 */
export async function loadConfig(env: NodeJS.ProcessEnv, options: { envFile?: string; log?: (message: string) => void } = {}): Promise<LoadedConfig> {
  let config: AppConfig | undefined;
  const module = await ConfigModule.forRoot({
    isGlobal: true,
    cache: true,
    validatePredefined: false,
    skipProcessEnv: true,
    ignoreEnvFile: !options.envFile,
    envFilePath: options.envFile,
    validate: (fromFile) => {
      config = resolveConfig({ ...fromFile, ...env }, options.log);
      return { [APP_CONFIG_KEY]: config };
    },
  });
  return { config: config!, module };
}
