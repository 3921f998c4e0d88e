import { Module } from '@nestjs/common';
import { RemoteEntry } from './remote.entry';

@Module({ providers: [RemoteEntry] })
export class RemoteEntryModule {}
