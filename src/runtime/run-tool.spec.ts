import type { EntityManager } from 'typeorm';
import { ToolContext, ToolError } from '../capabilities/capability.types';
import { EffectWrites, runTool } from './run-tool';

const context = { orgId: 'o', agentId: 'a', version: 1, callId: 'c', runId: null };
/** Hands each write a stand-in for its transaction; these writes are promises the tests settle. */
const db = {} as EntityManager;
const effects: EffectWrites = { run: (write) => write(db) };

function tool(execute: (args: unknown, ctx: ToolContext) => unknown, maxOutputTokens = 0) {
  return { declaration: { maxOutputTokens }, execute };
}

describe('runTool', () => {
  it('hands the tool its arguments and context, and returns its result', async () => {
    let seen: ToolContext | undefined;
    const out = await runTool(
      tool((args, ctx) => ((seen = ctx), { echo: args })),
      { q: 1 },
      context,
      1000,
      fail,
    );
    expect(out).toEqual({ status: 'succeeded', result: { echo: { q: 1 } }, json: '{"echo":{"q":1}}', truncated: false });
    expect(seen).toMatchObject(context);
    expect(seen!.signal.aborted).toBe(false);
  });

  it('turns a ToolError into a failure the model can read', async () => {
    const out = await runTool(
      tool(() => Promise.reject(new ToolError('not_found', 'No such order.'))),
      {},
      context,
      1000,
      fail,
    );
    expect(out).toEqual({ status: 'failed', error: { code: 'not_found', message: 'No such order.' } });
  });

  it('replaces U+0000 in a ToolError message: it cannot be stored', async () => {
    const out = await runTool(
      tool(() => Promise.reject(new ToolError('bad_input', 'No order a\u0000b.'))),
      {},
      context,
      1000,
      fail,
    );
    expect(out).toEqual({ status: 'failed', error: { code: 'bad_input', message: 'No order a\uFFFDb.' } });
  });

  it('refuses a ToolError code that is not a safe identifier', async () => {
    const out = await runTool(
      tool(() => {
        throw new ToolError('Bad Code!', '');
      }),
      {},
      context,
      1000,
      fail,
    );
    expect(out).toEqual({ status: 'failed', error: { code: 'tool_error', message: 'The tool failed.' } });
  });

  it('hides the message of any other exception and reports it', async () => {
    const seen: unknown[] = [];
    const out = await runTool(
      tool(() => {
        throw new Error('password=hunter2 at db.ts:12');
      }),
      {},
      context,
      1000,
      (e) => seen.push(e),
    );
    expect(out).toEqual({ status: 'failed', error: { code: 'tool_error', message: 'The tool failed unexpectedly.' } });
    expect(JSON.stringify(out)).not.toContain('hunter2');
    expect(seen).toHaveLength(1);
  });

  it('aborts the signal at the timeout and fails with code timeout', async () => {
    let signal: AbortSignal | undefined;
    const slow = tool((_args, ctx) => {
      signal = ctx.signal;
      return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    });
    const out = await runTool(slow, {}, context, 20, fail);
    expect(out).toEqual({ status: 'failed', error: { code: 'timeout', message: 'The tool did not finish within 20 ms.' } });
    expect(signal!.aborted).toBe(true);
  });

  it('hands a tool that reads the signal only after the timeout one already aborted, with the reason', async () => {
    let late: AbortSignal | undefined;
    let read: () => void = () => undefined;
    const slow = tool((_args, ctx) => new Promise<void>((resolve) => (read = () => ((late = ctx.signal), resolve()))));
    const out = await runTool(slow, {}, context, 10, fail);
    expect(out).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    read();
    expect(late!.aborted).toBe(true);
    expect(late!.reason).toBeInstanceOf(ToolError);
    expect((late!.reason as ToolError).code).toBe('timeout');
  });

  it('gives the same signal on every read, and in a copy of the context', async () => {
    const seen: AbortSignal[] = [];
    const slow = tool((_args, ctx) => {
      const copy = { ...ctx };
      seen.push(ctx.signal, ctx.signal, copy.signal);
      return new Promise((_resolve, reject) => copy.signal.addEventListener('abort', () => reject(copy.signal.reason)));
    });
    const out = await runTool(slow, {}, context, 10, fail);
    expect(out).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    expect(new Set(seen).size).toBe(1);
    expect(seen[0].aborted).toBe(true);
  });

  it('discards the late result of a tool that ignores the signal', async () => {
    let finish: (v: unknown) => void = () => undefined;
    const stubborn = tool(() => new Promise((resolve) => (finish = resolve)));
    const out = await runTool(stubborn, {}, context, 10, fail);
    finish('too late');
    expect(out).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  });

  it('waits at the deadline for a write under way, and reports what it did: committed is succeeded, not a timeout', async () => {
    let commit: () => void = () => undefined;
    const writer = tool(async (_args, ctx) => {
      const row = await ctx.effect(() => new Promise<string>((resolve) => (commit = () => resolve('written'))));
      return { row };
    });
    const running = runTool(writer, {}, context, 10, fail, effects);
    await new Promise((r) => setTimeout(r, 30));
    commit();
    expect(await running).toMatchObject({ status: 'succeeded', result: { row: 'written' } });
  });

  it('answers the timeout when the write under way at the deadline fails (nothing was written)', async () => {
    let rollBack: () => void = () => undefined;
    const writer = tool(async (_args, ctx) => {
      await ctx.effect(() => new Promise<void>((_resolve, reject) => (rollBack = () => reject(new Error('rolled back')))));
      return 'unreached';
    });
    const running = runTool(writer, {}, context, 10, fail, effects);
    await new Promise((r) => setTimeout(r, 30));
    rollBack();
    expect(await running).toEqual({ status: 'failed', error: { code: 'timeout', message: 'The tool did not finish within 10 ms.' } });
  });

  it('refuses a write asked for after the deadline: it never starts', async () => {
    let proceed: () => void = () => undefined;
    const write = jest.fn(async () => 'written');
    let refused: unknown;
    const late = tool(async (_args, ctx) => {
      await new Promise<void>((resolve) => (proceed = resolve));
      refused = await ctx.effect(write).catch((err: unknown) => err);
    });
    const out = await runTool(late, {}, context, 10, fail, effects);
    expect(out).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    proceed();
    await new Promise((r) => setImmediate(r));
    expect(write).not.toHaveBeenCalled();
    expect(refused).toBeInstanceOf(ToolError);
  });

  it('hands a write the transaction of its call, and refuses one without (a read-only call has no effect)', async () => {
    const seen: unknown[] = [];
    const writer = tool(async (_args, ctx) => ctx.effect(async (tx) => (seen.push(tx), 'written')));
    expect(await runTool(writer, {}, context, 1000, fail, effects)).toMatchObject({ status: 'succeeded', result: 'written' });
    expect(seen).toEqual([db]);
    const unexpected: unknown[] = [];
    expect(await runTool(writer, {}, context, 1000, (err) => unexpected.push(err))).toEqual({
      status: 'failed',
      error: { code: 'tool_error', message: 'The tool failed unexpectedly.' },
    });
    expect(String(unexpected[0])).toContain('read-only tool has no effect');
    expect(seen).toHaveLength(1);
  });

  it('refuses a write asked for after the tool returned: its outcome is already taken', async () => {
    const write = jest.fn(async () => 'written');
    let later: Promise<unknown> = Promise.resolve();
    const hasty = tool((_args, ctx) => {
      later = Promise.resolve()
        .then(() => new Promise((r) => setImmediate(r)))
        .then(() => ctx.effect(write));
      return 'done';
    });
    expect(await runTool(hasty, {}, context, 1000, fail, effects)).toMatchObject({ status: 'succeeded', result: 'done' });
    await expect(later).rejects.toMatchObject({ code: 'tool_returned' });
    expect(write).not.toHaveBeenCalled();
  });

  it('applies the output budget and fails a result that is not JSON', async () => {
    const out = await runTool(
      tool(() => 'word '.repeat(100), 5),
      {},
      context,
      1000,
      fail,
    );
    expect(out).toMatchObject({ status: 'succeeded', truncated: true });
    const bad = await runTool(
      tool(() => ({ n: 1n })),
      {},
      context,
      1000,
      fail,
    );
    expect(bad).toEqual({ status: 'failed', error: { code: 'invalid_result', message: 'The tool returned a result that is not JSON.' } });
  });
});

function fail(err: unknown): never {
  throw err;
}
