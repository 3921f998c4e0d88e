import { Injectable } from '@nestjs/common';
import type { VersionTool } from '../agents/built-version';
import { CapabilityRegistry } from '../capabilities/capability-registry.service';
import type { RunnableVersion, ToolImplementation, ToolImplementationResolver, ValidatedArguments } from './tool-implementations';

/**
 * Tools of the capabilities this code base declares: arguments validated with the declared input
 * class, and run by the tool the capability built while the version was being built for this call.
 */
@Injectable()
export class CapabilityToolResolver implements ToolImplementationResolver {
  constructor(private readonly registry: CapabilityRegistry) {}

  handles(tool: VersionTool): boolean {
    return this.registry.get(tool.capabilityId) !== undefined;
  }

  validate(tool: VersionTool, args: unknown): ValidatedArguments {
    return this.registry.validateToolInput(tool.capabilityId, tool.toolId, args);
  }

  resolve(tool: VersionTool, version: RunnableVersion): ToolImplementation | undefined {
    const builtTool = version.contributions.get(tool.capabilityId)?.tools.find((t) => t.id === tool.toolId);
    if (!builtTool) return undefined;
    return { declaration: tool.declaration, execute: (args, ctx) => builtTool.execute(args, ctx) };
  }
}
