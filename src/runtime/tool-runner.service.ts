import { Inject, Injectable, Logger } from '@nestjs/common';
import type { VersionTool } from '../agents/built-version';
import { ToolReferences } from '../agents/tool-references';
import { APP_CONFIG, AppConfig } from '../config/app-config';
import { EffectWrites, NO_EFFECTS, runTool, ToolOutcome } from './run-tool';
import { RunStorageRepository } from './run-storage.repository';
import { RunnableVersion, ToolImplementations } from './tool-implementations';
import { Metrics } from '../telemetry/metrics';
import { inSpan } from '../telemetry/tool-tracing';

/** The call a tool runs for (its ToolContext, less the signal). */
export interface RunFor {
  id: string;
  orgId: string;
  agentId: string;
  version: number;
  runId: string | null;
}

/**
 * The last step of the executor: resolve the implementation and run it under the timeout and the
 * output budget. Callers have passed every guard and recorded the call as running (or are about
 * to record a read-only call's result); this class decides nothing.
 */
@Injectable()
export class ToolRunner {
  private readonly logger = new Logger(ToolRunner.name);

  constructor(
    private readonly implementations: ToolImplementations,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly metrics: Metrics,
    private readonly storage: RunStorageRepository,
  ) {}

  /**
   * Every run of every path passes here, so this is where a run is timed, counted and traced. The
   * span is always under the call's `execute_tool`, which names the capability, the tool and the
   * call: this one says only how the run ended (every attribute is paid for in every export).
   * `effects`: where the tool's `ctx.effect` writes (an approved call's CallTransaction); by
   * default it may not write at all.
   */
  run(version: RunnableVersion, tool: VersionTool, args: object, call: RunFor, effects: EffectWrites = NO_EFFECTS): Promise<ToolOutcome> {
    return inSpan(`tool ${tool.capabilityId}/${tool.toolId}`, async (span) => {
      const started = performance.now();
      const outcome = await this.runUntimed(version, tool, args, call, effects);
      this.metrics.toolCall(tool, outcome.status, { seconds: (performance.now() - started) / 1000 });
      span.setAttribute('cp.tool_call.status', outcome.status);
      if (outcome.status === 'failed') span.setAttribute('error.type', outcome.error.code);
      return outcome;
    });
  }

  /**
   * A result with no output budget (`load_skill`: instructions are not cut) is kept whole in its call, and calls are
   * never removed: past RUNS_MAX_BYTES_PER_ORG each stored up to 400 KB more, for good (attack round 21, AC-F3). One
   * the bound counts (past the 2 KB a call keeps uncounted) is refused there, as heavy arguments are; nothing ran that
   * wrote. So is a read-only tool's (AC-N3).
   */
  private async uncutPastBound(outcome: { result: unknown; json?: string }, orgId: string): Promise<boolean> {
    const json = outcome.json ?? JSON.stringify(outcome.result) ?? '';
    return Buffer.byteLength(json) > UNCOUNTED_RESULT_BYTES && (await this.storage.full(orgId));
  }

  private async runUntimed(version: RunnableVersion, tool: VersionTool, args: object, call: RunFor, effects: EffectWrites): Promise<ToolOutcome> {
    const implementation = await this.implementations.resolve(tool, version);
    if (!implementation) {
      // The build that offered the tool is the build that contributed it; a miss is a bug.
      this.logger.error({ callId: call.id, tool: `${tool.capabilityId}/${tool.toolId}` }, 'no implementation for an offered tool');
      return { status: 'failed', error: { code: 'tool_error', message: 'The tool failed unexpectedly.' } };
    }
    const outcome = await runTool(
      implementation,
      args,
      { orgId: call.orgId, agentId: call.agentId, version: call.version, callId: call.id, runId: call.runId },
      this.config.toolTimeoutMs,
      (err) => this.logger.error({ err, callId: call.id, tool: `${tool.capabilityId}/${tool.toolId}` }, 'tool threw an unexpected error'),
      effects,
    );
    // A read-only tool's result, cut or not: refusing it undoes nothing that matters, and calls are
    // never removed (a `read_document` page of 16 KB an agent key's call, AC-N3). A write's cut result
    // is still kept: it did what it did.
    const refusable = implementation.declaration.maxOutputTokens === 0 || tool.risk === 'read_only';
    if (outcome.status === 'succeeded' && refusable && (await this.uncutPastBound(outcome, call.orgId))) {
      return { status: 'failed', error: { code: 'storage_full', message: pastBound(this.storage.maxBytes, implementation.declaration.maxOutputTokens === 0) } };
    }
    if (outcome.status === 'succeeded' && outcome.offloaded && (await this.storage.full(call.orgId))) {
      // Past RUNS_MAX_BYTES_PER_ORG the whole result is not kept: the call keeps its cut result, as without offloading.
      return { ...outcome, offloaded: undefined };
    }
    // A tool's message names the tools to use instead by their ids; the model knows them by the offered names.
    if (outcome.status === 'failed' && !tool.source) {
      const references = ToolReferences.ofVersion(version.built);
      if (!references.empty) return { status: 'failed', error: { ...outcome.error, message: references.text(outcome.error.message) } };
    }
    return outcome;
  }
}

/** What a call stores without the bound counting it (the `tool_call_stored_bytes` trigger weighs a row past 2 KB). */
const UNCOUNTED_RESULT_BYTES = 2048;

function pastBound(maxBytes: number, whole: boolean): string {
  const kept = whole ? "this tool's result is kept whole" : "this read-only tool's result is kept in its call";
  return `This organization's runs and tool calls store what they may (RUNS_MAX_BYTES_PER_ORG, ${maxBytes} bytes), and ${kept}, so it was not answered. Ask the operator for more room.`;
}
