import { Context, context, createContextKey, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import fc from 'fast-check';
import { ChainedContext, ChainedContextManager } from './chained-context';

const KEYS = [createContextKey('a'), createContextKey('b'), createContextKey('c'), createContextKey('d'), Symbol.for('OpenTelemetry Context Key SPAN')];

type Op = { op: 'set'; from: number; key: number; value: unknown } | { op: 'delete'; from: number; key: number };

/** Which key an op touches: mostly the first, so the others, set now and then, outlive a flattening. */
const key = fc.oneof({ weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(KEYS.length - 1) });
/** Which context an op derives from: mostly the last one made (deep chains, past the flattening), else any. */
const from = fc.oneof({ weight: 19, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() });

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('set' as const),
      from,
      key,
      value: fc.oneof(fc.integer(), fc.constant(undefined), fc.constant(null), fc.string()),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('delete' as const), from, key }) },
);

/** Applies the ops, each to one of the contexts made so far (a tree of derivations), from `root`. */
function apply(root: Context, ops: Op[]): Context[] {
  const made = [root];
  for (const o of ops) {
    const parent = o.from < 0 ? made[made.length - 1] : made[o.from % made.length];
    made.push(o.op === 'set' ? parent.setValue(KEYS[o.key], o.value) : parent.deleteValue(KEYS[o.key]));
  }
  return made;
}

const read = (c: Context) => KEYS.map((k) => c.getValue(k));

describe('ChainedContext', () => {
  it("reads as the API's own context after any tree of sets and deletes, the contexts it came from unchanged", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const theirs = apply(ROOT_CONTEXT, ops);
        const ours = apply(ChainedContext.ROOT, ops);
        expect(ours.map(read)).toEqual(theirs.map(read));
      }),
      { numRuns: 300 },
    );
  });

  it('stays as shallow as the keys it holds when derived from itself without end', () => {
    let ctx: Context = ChainedContext.ROOT.setValue(KEYS[4], 'set first').setValue(KEYS[3], 'deleted').setValue(KEYS[4], 'set last');
    for (let i = 0; i < 10_000; i++) ctx = ctx.setValue(KEYS[i % 3], i).deleteValue(KEYS[3]);
    expect(read(ctx)).toEqual([9_999, 9_997, 9_998, undefined, 'set last']);
    let depth = 0;
    for (let link = ctx as unknown as { parent?: unknown } | undefined; link; link = link.parent as never) depth++;
    expect(depth).toBeLessThanOrEqual(34);
  });
});

describe('ChainedContextManager', () => {
  const manager = new ChainedContextManager();
  beforeAll(() => context.setGlobalContextManager(manager.enable()));
  afterAll(() => context.disable());

  it('makes every context derived from the active one a chain, carried across awaits and restored after', async () => {
    expect(context.active()).toBe(ChainedContext.ROOT);
    const span = trace.wrapSpanContext({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 });
    const derived = trace.setSpan(context.active(), span);
    expect(derived).toBeInstanceOf(ChainedContext);
    const seen = await context.with(derived, async () => {
      await new Promise((r) => setTimeout(r, 1));
      return [trace.getSpan(context.active()), context.active().getValue(KEYS[0])];
    });
    expect(seen).toEqual([span, undefined]);
    expect(context.active()).toBe(ChainedContext.ROOT);
    // A context of the API's own kind is active as it is.
    const theirs = ROOT_CONTEXT.setValue(KEYS[0], 1);
    expect(context.with(theirs, () => context.active())).toBe(theirs);
  });
});
