import { Module } from '@nestjs/common';
import { SkillsController } from './skills.controller';
import { SkillsRepository } from './skills.repository';

@Module({ controllers: [SkillsController], providers: [SkillsRepository], exports: [SkillsRepository] })
export class SkillsModule {}
