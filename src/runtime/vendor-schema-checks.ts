import { Inject, Injectable, OnModuleDestroy, Optional } from '@nestjs/common';
import { extname, join } from 'node:path';
import Piscina from 'piscina';
import { ApiError } from '../common/api-error';
import { LruCache } from '../common/lru-cache';
import { OrgGate } from '../common/org-gate';
import type { FieldError } from '../common/api-error';
import { answerOf, compileVendorSchema, type VendorValidator } from './vendor-schema';
import type { VendorCheck, VendorCheckAnswer } from './vendor-schema.worker';

/** The errors found in a call's arguments (none: valid), or why the schema cannot check them. */
export type VendorArgumentsCheck = { unusable: string } | { errors: FieldError[]; omitted: number };

export interface VendorCheckLimits {
  /** What one check (a compile included) may hold its thread, in ms; past it the thread is ended. */
  checkMs: number;
  /** The heap a thread may take, in MB: past it the thread ends, not the node. */
  heapMb: number;
  /** One organization's checks waiting on a node; past it `429 rate_limited`. */
  waitingPerOrg: number;
  /** A schema the thread compiled within this many ms is compiled on the node too (INLINE_COMPILE_MS). */
  inlineCompileMs: number;
}

/** Digests a node remembers, unusable or compiled for its own checks: as many as a thread keeps compiled. */
const DIGESTS_KEPT = 2000;

/**
 * A thread's turn costs the node 100 to 200 µs of its own (messages, waking the thread), where
 * checking a call's usual arguments takes a few dozen steps of a microsecond or less: with every
 * check on the thread, calls of an MCP tool with small arguments had 0.81 of the throughput they had
 * checked here. So a schema the thread compiled within INLINE_COMPILE_MS (a usual one takes 4 to
 * 8 ms: each has an Ajv of its own) is compiled here too, once, and a call of it is checked here
 * first within INLINE_STEPS steps (a few hundred µs at most, what a turn costs); one those do not
 * decide is checked on the thread, in full.
 */
export const INLINE_STEPS = 2000;
export const INLINE_COMPILE_MS = 20;
/**
 * And only arguments of at most so many values and characters (strings and names): a keyword may
 * read a value whole before it is charged (an item's canonical JSON for `uniqueItems`), and what one
 * reads must be small where every request waits.
 */
export const INLINE_VALUES = 256;
export const INLINE_CHARS = 16_384;

export const DEFAULT_VENDOR_CHECK_LIMITS: VendorCheckLimits = { checkMs: 2000, heapMb: 512, waitingPerOrg: 64, inlineCompileMs: INLINE_COMPILE_MS };
/** Not provided by any module: tests hand their own limits to the constructor. */
export const VENDOR_CHECK_LIMITS = Symbol('VENDOR_CHECK_LIMITS');

/**
 * Checks an MCP tool's arguments against the schema its vendor's server listed, on a worker thread.
 *
 * Compiling such a schema (Ajv writes a function of it) cost the thread that serves every request
 * what the vendor wrote: about 18 µs a character, and unions nested branch in branch, so a tool
 * whose schema was an `anyOf` of 2,000 `const`s held the node 5.4 s on its first call, and 16 s
 * nested in a property (attack round 18, X-N1); checking arguments within the step budget of
 * `vendor-schema.ts` still cost up to 1.9 s (X-N2). Both now happen on one worker thread (piscina)
 * that keeps the compiled validators, and the node's own thread only waits (but for the small
 * checks it makes first, INLINE_STEPS):
 *
 * - a check that holds the thread past `checkMs` ends it (another starts, compiling again what it
 *   is asked next), and the call is refused saying so; a schema whose compile ran out of time is
 *   remembered as unusable on this node, so it is not compiled again by every call of it;
 * - a thread past `heapMb` ends the same way, not the node;
 * - organizations take turns: one check of each at a time, in order of arrival, so one whose tools
 *   cost the most delays another's check by at most one of its own; `waitingPerOrg` may wait.
 *
 * One thread, on purpose: it keeps one cache of compiled schemas, and on two cores the other serves
 * requests. Started at the first check, so a node that never checks a vendor's schema has none.
 */
@Injectable()
export class VendorSchemaChecks implements OnModuleDestroy {
  private readonly limits: VendorCheckLimits;
  private pool: Piscina<VendorCheck, VendorCheckAnswer> | undefined;
  /** The current thread's first task, answered once it is up. */
  private started: Promise<unknown> | undefined;
  /** Past the node's shutdown no thread is started again (it would hold the process open). */
  private closed = false;
  private readonly unusable = new LruCache<string, string>(DIGESTS_KEPT);
  /** Schemas the thread compiled within INLINE_COMPILE_MS, compiled here too. */
  private readonly inline = new LruCache<string, VendorValidator>(DIGESTS_KEPT);
  private readonly perOrg: OrgGate;
  /** Every organization's one check at a time, first come first served: turns, since each has one. */
  private readonly thread = new OrgGate(1);

  constructor(@Optional() @Inject(VENDOR_CHECK_LIMITS) limits?: Partial<VendorCheckLimits>) {
    this.limits = { ...DEFAULT_VENDOR_CHECK_LIMITS, ...limits };
    this.perOrg = new OrgGate(
      1,
      this.limits.waitingPerOrg,
      (waiting) =>
        new ApiError(
          'rate_limited',
          `This organization has ${waiting} calls of MCP tools waiting on this server for their arguments to be checked, the most it may; retry shortly.`,
          undefined,
          undefined,
          { 'Retry-After': '1' },
        ),
    );
  }

  async check(orgId: string, digest: string, schema: Record<string, unknown>, args: Record<string, unknown>): Promise<VendorArgumentsCheck> {
    const known = this.unusable.get(digest);
    if (known !== undefined) return { unusable: known };
    const inline = this.inline.get(digest);
    const found = inline && small(args) ? inline(args, INLINE_STEPS) : undefined;
    if (found !== undefined) return answerOf(found);
    return this.perOrg.run(orgId, () => this.thread.run('', () => this.checkInTurn(digest, schema, args)));
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    await this.pool?.destroy();
  }

  private async checkInTurn(digest: string, schema: Record<string, unknown>, args: Record<string, unknown>): Promise<VendorArgumentsCheck> {
    // One `checkMs` for the whole turn, not one a task: a turn of three tasks of 2 s each (ask,
    // compile, check) held every other organization's check up to 5.5 s (attack round 19, Y-N1).
    const turn: Turn = { leftMs: this.limits.checkMs };
    // Asked without the schema first: a schema may be megabytes, and the thread usually has it.
    const answer = await this.run({ digest, args }, turn);
    if ('cut' in answer) return { unusable: `checking these arguments against it ${answer.cut.why}` };
    if (!('missing' in answer)) return argumentsCheck(answer);
    // A lookup that found nothing did no work: the compile has the whole turn, so one that runs out
    // of it would run out again, and is remembered.
    turn.leftMs = this.limits.checkMs;
    let compiled = await this.run({ digest, schema }, turn);
    // The heap a thread runs out of holds every schema it keeps compiled, any organization's: one
    // whose validators filled it got another's ordinary schema refused, and remembered so on the
    // node (attack round 19, Y-F3). The schema is blamed only when a thread holding none of them,
    // the one started since, runs out on it too, within what is left of the turn.
    const retried = 'cut' in compiled && compiled.cut.by === 'memory';
    if (retried) compiled = await this.run({ digest, schema }, turn);
    if ('cut' in compiled) {
      const unusable = `compiling it ${compiled.cut.why}`;
      // A compile that ran out would run out again: the schema is not tried again on this node.
      // One retried after the memory ran out had only what the first left of the turn: not its fault.
      if (compiled.cut.by === 'memory' || !retried) this.unusable.set(digest, unusable);
      return { unusable };
    }
    if ('unusable' in compiled) return { unusable: compiled.unusable };
    if ('compiled' in compiled && compiled.ms <= this.limits.inlineCompileMs) {
      const local = compileVendorSchema(schema);
      if (typeof local !== 'string') this.inline.set(digest, local);
    }
    const checked = await this.run({ digest, args }, turn);
    if ('cut' in checked) return { unusable: `compiling it and checking these arguments against it ${checked.cut.why.replace('takes', 'take')}` };
    // This turn is the thread's only task: nothing ended it between the compile and now.
    return argumentsCheck(checked);
  }

  /** Runs a task within what is left of the turn; a thread's start (once up, the next) is not counted. */
  private async run(task: VendorCheck, turn: Turn): Promise<VendorCheckAnswer | { cut: CutShort }> {
    const pool = this.poolOf();
    await this.ready(pool);
    // Nothing left (a compile retried after the memory ran out took it all): not started only to be ended.
    if (turn.leftMs <= 0) return { cut: { why: `takes more than ${this.limits.checkMs} ms`, by: 'time' } };
    const start = performance.now();
    try {
      return await pool.run(task, { signal: AbortSignal.timeout(Math.max(1, Math.ceil(turn.leftMs))) });
    } catch (err) {
      // The node's shutdown ended the thread under this check (piscina: `Terminating worker thread`): was a 500 (attack round 19, Y-F5).
      if (this.closed) throw shuttingDown();
      const cut = cutShort(err, this.limits);
      if (cut === undefined) throw err;
      // The thread was ended: its successor is started within this turn, the one whose task ended
      // it, not within the next organization's.
      this.started = undefined;
      await this.ready(this.poolOf()).catch(() => undefined);
      return { cut };
    } finally {
      turn.leftMs -= performance.now() - start;
    }
  }

  private ready(pool: Piscina<VendorCheck, VendorCheckAnswer>): Promise<unknown> {
    // A thread's start (loading Ajv; under tests, compiling TypeScript too) is not the check's time.
    // Its first compile (Ajv's code not yet optimized) takes several times a later one's: done here.
    return (this.started ??= pool.run({ digest: '', schema: { type: 'object', properties: { a: { type: 'string' } } } }).catch((err: unknown) => {
      // A thread that cannot start (its heap too small for Ajv) is a failure of the node, tried again
      // next call; one the node's shutdown ended while it started is the shutdown's.
      this.started = undefined;
      throw this.closed ? shuttingDown() : err;
    }));
  }

  private poolOf(): Piscina<VendorCheck, VendorCheckAnswer> {
    if (this.closed) throw shuttingDown();
    if (this.pool) return this.pool;
    const source = extname(__filename);
    this.pool = new Piscina<VendorCheck, VendorCheckAnswer>({
      filename: join(__dirname, `vendor-schema.worker${source}`),
      minThreads: 1,
      maxThreads: 1,
      // The compiled validators are the thread's: it lives as long as the node.
      idleTimeout: Infinity,
      // Tests and `npm run bench` run the TypeScript sources; the build runs JavaScript.
      execArgv: source === '.ts' ? ['-r', '@swc-node/register'] : [],
      resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb },
    });
    return this.pool;
  }
}

/** Whether the arguments are within INLINE_VALUES and INLINE_CHARS: read no further than that. */
function small(args: unknown): boolean {
  let values = 0;
  let chars = 0;
  const pending: unknown[] = [args];
  while (pending.length > 0) {
    const value = pending.pop();
    if (++values > INLINE_VALUES) return false;
    if (typeof value === 'string') chars += value.length;
    else if (Array.isArray(value)) pending.push(...value.slice(0, INLINE_VALUES + 1 - values));
    else if (value !== null && typeof value === 'object')
      for (const name in value) {
        chars += name.length;
        pending.push((value as Record<string, unknown>)[name]);
        if (pending.length > INLINE_VALUES) return false;
      }
    if (chars > INLINE_CHARS) return false;
  }
  return true;
}

/** What is left of a turn's `checkMs`, spent by the thread's work only. */
type Turn = { leftMs: number };
type CutShort = { why: string; by: 'time' | 'memory' };

function argumentsCheck(answer: VendorCheckAnswer): VendorArgumentsCheck {
  if ('missing' in answer || 'compiled' in answer) throw new Error('invariant: the schema thread lost a schema within one turn');
  return 'unusable' in answer ? { unusable: answer.unusable } : answer;
}

/** What ended a check early, as the refusal says it; undefined for anything else (a bug, thrown on). */
function cutShort(err: unknown, limits: VendorCheckLimits): CutShort | undefined {
  const e = err as { name?: string; code?: string };
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') return { why: `takes more than ${limits.checkMs} ms`, by: 'time' };
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY') return { why: `takes more than ${limits.heapMb} MB of memory`, by: 'memory' };
  return undefined;
}

function shuttingDown(): ApiError {
  return new ApiError('service_unavailable', 'This server is shutting down; retry on another.', undefined, undefined, { 'Retry-After': '1' });
}
