import { Module } from '@nestjs/common';
import { EverythingEntry } from './everything.entry';

@Module({ providers: [EverythingEntry] })
export class EverythingEntryModule {}
