import { Module } from '@nestjs/common';
import { CapabilitiesModule } from '../capabilities/capabilities.module';
import { GovernanceController } from './governance.controller';
import { GovernanceRepository } from './governance.repository';
import { GovernanceService } from './governance.service';

/**
 * Incident-response switches: retired versions and disabled tools. Exports the repository so the
 * tool policy can read both at every entry point, and the service for the retire route.
 */
@Module({
  imports: [CapabilitiesModule],
  controllers: [GovernanceController],
  providers: [GovernanceRepository, GovernanceService],
  exports: [GovernanceRepository, GovernanceService],
})
export class GovernanceModule {}
