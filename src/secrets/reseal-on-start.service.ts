import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { describeReseal, remainingCount, remainingUnderOtherKeys, resealSecrets } from '../database/reseal-secrets';
import { SecretsService } from './secrets.service';

/**
 * With SECRETS_KEY_PREVIOUS set (a rotation under way), every start seals again under SECRETS_KEY
 * what the previous key sealed, so that key can be dropped once `npm run secrets:reseal` reports
 * nothing left (docs/operations.md, "Rotating SECRETS_KEY"). Values under a key this node does not
 * hold are said at error level (also without SECRETS_KEY_PREVIOUS: a node started with the wrong
 * key says so at once, not request by request): every use of them fails on this node. A failure of the pass
 * is logged and does not stop the start; the next start, or the command, tries again.
 */
@Injectable()
export class ResealOnStart implements OnApplicationBootstrap {
  private readonly logger = new Logger('SecretsRotation');

  constructor(
    private readonly dataSource: DataSource,
    private readonly secrets: SecretsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    try {
      if (!this.config.secrets.previousKey) {
        // Nothing to re-seal with one key; still say at start what this node will fail to open.
        const remaining = await remainingUnderOtherKeys(this.dataSource, this.secrets);
        if (remaining.length > 0) this.logger.error(describeReseal({ resealed: 0, remaining }, this.secrets.currentKeyId));
        return;
      }
      const report = await resealSecrets(this.dataSource, this.secrets);
      const line = describeReseal(report, this.secrets.currentKeyId);
      if (remainingCount(report) > 0) this.logger.error(line);
      else this.logger.log(line);
    } catch (err) {
      this.logger.error(`re-sealing stored secrets under SECRETS_KEY failed: ${(err as Error).message}`);
    }
  }
}
