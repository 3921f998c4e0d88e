import { Module } from '@nestjs/common';
import { MeController } from './me.controller';
import { OrgsController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';
import { PrincipalsController } from './principals.controller';
import { PrincipalsRepository } from './principals.repository';
import { UsageRepository } from './usage.repository';

@Module({
  controllers: [OrgsController, MeController, PrincipalsController],
  providers: [OrgsService, OrgsRepository, PrincipalsRepository, UsageRepository],
  exports: [OrgsService],
})
export class OrgsModule {}
