import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BuiltinCapabilitiesModule } from './builtin/builtin.module';
import { CapabilitiesController } from './capabilities.controller';
import { CapabilityMetadataAccessor } from './capability-metadata.accessor';
import { CapabilityRegistry } from './capability-registry.service';
import { CapabilityExplorer } from './capability.explorer';

/**
 * The capability framework: discovers every `@Capability()` provider in the application (the
 * builtin ones, and any other module's, such as test fixtures), validates the set at boot, and
 * serves the catalog. Import it to use the registry.
 */
@Module({
  imports: [DiscoveryModule, BuiltinCapabilitiesModule],
  controllers: [CapabilitiesController],
  providers: [CapabilityMetadataAccessor, CapabilityExplorer, CapabilityRegistry],
  exports: [CapabilityRegistry, DiscoveryModule],
})
export class CapabilitiesModule {}
