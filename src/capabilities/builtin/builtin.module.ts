import { Module } from '@nestjs/common';
import { ClockModule } from './clock/clock.module';

/**
 * Registration is an import: a capability exists for the registry only when its module is listed
 * here. The layout test fails on a folder under builtin/ that is missing from this list.
 */
@Module({
  imports: [ClockModule],
})
export class BuiltinCapabilitiesModule {}
