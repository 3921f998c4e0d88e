import { DiscoveryService } from '@nestjs/core';
import type { CapabilityDefinition } from './capability.types';

/**
 * Registers the decorated provider as a capability. Put it on exactly one provider per
 * capability, in `builtin/<id>/<id>.capability.ts`; the registry finds it at boot through
 * Nest's discovery (an indexed lookup, no string keys) and refuses the boot when it is malformed.
 */
export const Capability = DiscoveryService.createDecorator<CapabilityDefinition>();
