import type { CustomDecorator } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { CapabilityDefinition } from './capability.types';

/**
 * Registers the decorated provider as a capability. Put it on exactly one provider per
 * capability, in `builtin/<id>/<id>.capability.ts`; the registry finds it at boot through
 * Nest's discovery (an indexed lookup, no string keys) and refuses the boot when it is malformed.
 *
 * The type is Nest's, narrowed so that the declaration is required: `@Capability()` with nothing,
 * a declaration without `tools`, or a tool without `risk` do not compile.
 */
export const Capability: ((definition: CapabilityDefinition) => CustomDecorator) & { KEY: string } = DiscoveryService.createDecorator<CapabilityDefinition>();
