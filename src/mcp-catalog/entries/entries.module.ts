import { Module } from '@nestjs/common';
import { EverythingEntryModule } from './everything/everything.module';
import { RemoteEntryModule } from './remote/remote.module';

/** Registration is an import: an entry folder not imported here does not exist for the registry. */
@Module({ imports: [EverythingEntryModule, RemoteEntryModule] })
export class McpCatalogEntriesModule {}
