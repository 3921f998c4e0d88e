import { Module } from '@nestjs/common';
import { PositionSealKeyRepository } from './position-seal-key.repository';
import { PositionSeals } from './position-seals';

/**
 * The seals of stream positions and the audit cursor, apart from SecretsModule (which needs the
 * app's configuration): the audit module imports it, and so can a test that builds the audit
 * module alone.
 */
@Module({ providers: [PositionSealKeyRepository, PositionSeals], exports: [PositionSeals] })
export class PositionSealsModule {}
