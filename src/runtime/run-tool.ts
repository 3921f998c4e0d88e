import type { EntityManager } from 'typeorm';
import { ToolContext, ToolDeclaration, ToolError } from '../capabilities/capability.types';
import { withoutNulCharacters } from '../common/nul-character';
import { applyOutputBudget, BudgetedResult, UnusableResultError } from './output-budget';

export type ToolOutcome = ({ status: 'succeeded' } & BudgetedResult) | { status: 'failed'; error: { code: string; message: string } };

export interface RunnableImplementation {
  declaration: Pick<ToolDeclaration, 'maxOutputTokens' | 'offloadLargeResults'>;
  execute(args: unknown, ctx: ToolContext): unknown;
}

/**
 * Where a tool's effects write (`ctx.effect`): for an approved call, the transaction its
 * settlement commits (CallTransaction). `run` hands the write its transaction.
 */
export interface EffectWrites {
  run<T>(write: (db: EntityManager) => Promise<T>): Promise<T>;
}

/** A call that is not run under a transaction of its own (a read-only one): its tool may not write. */
export const NO_EFFECTS: EffectWrites = {
  run: () => Promise.reject(new Error('invariant: a tool without an approved call wrote through ctx.effect (a read-only tool has no effect)')),
};

const SAFE_CODE = /^[a-z][a-z0-9_.-]{0,63}$/;
const MAX_MESSAGE = 2000;

/**
 * Runs one tool: a timeout that aborts the signal handed to the tool, its failures turned into
 * results, its output measured against its budget. Never throws: whatever a tool does, the call
 * ends as `succeeded` or `failed`.
 *
 * A tool that ignores the signal keeps running after the timeout; its late result is discarded.
 * That is why side-effecting tools must pass the signal on to their I/O, and make their write,
 * their last I/O, through `ctx.effect`: a write under way at the deadline is waited for, and a
 * write that completed is the call's outcome, not a timeout. `effects` says where it writes.
 */
export async function runTool(
  tool: RunnableImplementation,
  args: unknown,
  context: Omit<ToolContext, 'signal' | 'effect'>,
  timeoutMs: number,
  onUnexpected: (err: unknown) => void,
  effects: EffectWrites = NO_EFFECTS,
): Promise<ToolOutcome> {
  // The signal is made when the tool first reads it: most tools never do (the builtins that only
  // read the database), and an AbortSignal cost several µs a call to make (docs/benchmarks.md). One
  // read after the timeout is already aborted, with the same reason.
  // Every field written out: a spread followed by another property is a slow object to build
  // (docs/design.md, stack notes), and a getter in the literal keeps `signal` an own property, so a
  // tool that copies its context (`{ ...ctx }`) copies the signal too.
  let controller: AbortController | undefined;
  let timeout: ToolError | undefined;
  // A write asked for once the outcome is taken would not be part of it.
  let returned = false;
  // Writes in flight (ctx.effect): the deadline's answer waits for them to end.
  let writing = 0;
  let settleDeadline: (() => void) | undefined;
  const ctx: ToolContext = {
    orgId: context.orgId,
    agentId: context.agentId,
    version: context.version,
    callId: context.callId,
    runId: context.runId,
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (timeout) controller.abort(timeout);
      }
      return controller.signal;
    },
    async effect<T>(write: (db: EntityManager) => Promise<T>): Promise<T> {
      if (timeout) throw timeout;
      if (returned) throw new ToolError('tool_returned', 'The tool had already returned; nothing was written.');
      writing++;
      try {
        return await effects.run(write);
      } finally {
        writing--;
        if (writing === 0) settleDeadline?.();
      }
    },
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timeout = new ToolError('timeout', `The tool did not finish within ${timeoutMs} ms.`);
      controller?.abort(timeout);
      // A write under way may commit: the tool's own answer (its result, or the write's failure) says what happened.
      if (writing === 0) reject(timeout);
      else settleDeadline = () => setImmediate(() => reject(timeout));
    }, timeoutMs);
  });
  try {
    // `then` turns a synchronous throw into a rejection, so both kinds of failure land below.
    const running = Promise.resolve().then(() => tool.execute(args, ctx));
    running.catch(() => undefined); // a late failure after the timeout must not be unhandled
    const value = await Promise.race([running, deadline]);
    return { status: 'succeeded', ...applyOutputBudget(value, tool.declaration) };
  } catch (err) {
    if (timeout) return { status: 'failed', error: { code: 'timeout', message: timeout.message } };
    if (err instanceof UnusableResultError) return { status: 'failed', error: { code: err.code, message: err.message } };
    if (err instanceof ToolError) {
      const code = typeof err.code === 'string' && SAFE_CODE.test(err.code) ? err.code : 'tool_error';
      const message = typeof err.message === 'string' && err.message ? withoutNulCharacters(err.message.slice(0, MAX_MESSAGE)) : 'The tool failed.';
      return { status: 'failed', error: { code, message } };
    }
    // Anything else is a bug in the tool: its message may hold internals, so it goes to the log only.
    onUnexpected(err);
    return { status: 'failed', error: { code: 'tool_error', message: 'The tool failed unexpectedly.' } };
  } finally {
    returned = true;
    clearTimeout(timer);
  }
}
