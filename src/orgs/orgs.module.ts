import { Module } from '@nestjs/common';
import { MeController } from './me.controller';
import { OrgsController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

@Module({ controllers: [OrgsController, MeController], providers: [OrgsService, OrgsRepository], exports: [OrgsService] })
export class OrgsModule {}
