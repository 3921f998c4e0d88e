import { Module } from '@nestjs/common';
import { KnowledgeController } from './knowledge.controller';
import { KnowledgeRepository } from './knowledge.repository';

@Module({ controllers: [KnowledgeController], providers: [KnowledgeRepository], exports: [KnowledgeRepository] })
export class KnowledgeModule {}
