import { ToolContext, ToolDeclaration, ToolError } from '../capabilities/capability.types';
import { withoutNulCharacters } from '../common/nul-character';
import { applyOutputBudget, BudgetedResult, UnusableResultError } from './output-budget';

export type ToolOutcome = ({ status: 'succeeded' } & BudgetedResult) | { status: 'failed'; error: { code: string; message: string } };

export interface RunnableImplementation {
  declaration: Pick<ToolDeclaration, 'maxOutputTokens' | 'offloadLargeResults'>;
  execute(args: unknown, ctx: ToolContext): unknown;
}

const SAFE_CODE = /^[a-z][a-z0-9_.-]{0,63}$/;
const MAX_MESSAGE = 2000;

/**
 * Runs one tool: a timeout that aborts the signal handed to the tool, its failures turned into
 * results, its output measured against its budget. Never throws: whatever a tool does, the call
 * ends as `succeeded` or `failed`.
 *
 * A tool that ignores the signal keeps running after the timeout; its late result is discarded.
 * That is why side-effecting tools must pass the signal on to their I/O.
 */
export async function runTool(
  tool: RunnableImplementation,
  args: unknown,
  context: Omit<ToolContext, 'signal'>,
  timeoutMs: number,
  onUnexpected: (err: unknown) => void,
): Promise<ToolOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new ToolError('timeout', `The tool did not finish within ${timeoutMs} ms.`));
      reject(controller.signal.reason);
    }, timeoutMs);
  });
  try {
    // `then` turns a synchronous throw into a rejection, so both kinds of failure land below.
    const running = Promise.resolve().then(() => tool.execute(args, { ...context, signal: controller.signal }));
    running.catch(() => undefined); // a late failure after the timeout must not be unhandled
    const value = await Promise.race([running, deadline]);
    return { status: 'succeeded', ...applyOutputBudget(value, tool.declaration) };
  } catch (err) {
    if (timedOut) return { status: 'failed', error: { code: 'timeout', message: `The tool did not finish within ${timeoutMs} ms.` } };
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
    clearTimeout(timer);
  }
}
