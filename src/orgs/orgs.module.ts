import { Module } from '@nestjs/common';
import { MeController } from './me.controller';
import { OrgsController } from './orgs.controller';
import { OrgsService } from './orgs.service';

@Module({ controllers: [OrgsController, MeController], providers: [OrgsService], exports: [OrgsService] })
export class OrgsModule {}
