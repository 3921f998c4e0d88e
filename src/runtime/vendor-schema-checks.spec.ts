import { ApiError } from '../common/api-error';
import { VendorSchemaChecks, VendorCheckLimits } from './vendor-schema-checks';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
/** A union Ajv nests branch in branch: its compile grows faster than its size (2,000 branches held the node 5.4 s). */
const union = (branches: number) => ({ type: 'object', properties: { x: { anyOf: Array.from({ length: branches }, (_, i) => ({ const: i + 1 })) } } });

describe('VendorSchemaChecks', () => {
  const made: VendorSchemaChecks[] = [];
  const checksWith = (limits: Partial<VendorCheckLimits> = {}) => {
    const checks = new VendorSchemaChecks(limits);
    made.push(checks);
    return checks;
  };
  afterAll(() => Promise.all(made.map((c) => c.onModuleDestroy())));

  it("compiles and checks off the node's thread: its timers run while a vendor's costly schema compiles", async () => {
    const checks = checksWith({ checkMs: 120_000 });
    const order: string[] = [];
    const timer = new Promise<void>((resolve) => setTimeout(() => resolve(void order.push('timer')), 20));
    const checked = checks.check(A, 'union-1000', union(1000), { x: 1000 }).then((answer) => (order.push('checked'), answer));
    // On the node's thread the compile held it whole: the answer came before any timer could run.
    expect(await checked).toEqual({ errors: [], omitted: 0 });
    await timer;
    expect(order).toEqual(['timer', 'checked']);
    expect(await checks.check(A, 'union-1000', union(1000), { x: 1001 })).toEqual({
      errors: expect.arrayContaining([expect.objectContaining({ path: 'x' })]),
      omitted: 951,
    });
  });

  it('a compile past its time ends the thread and is not tried again on the node; the next thread checks on', async () => {
    // The union compiles in 5 s or more; a plain schema in a few ms, on a loaded machine well within the second.
    const checks = checksWith({ checkMs: 1000 });
    const refused = { unusable: 'compiling it takes more than 1000 ms' };
    expect(await checks.check(A, 'union-3000', union(3000), { x: 1 })).toEqual(refused);
    // Remembered by digest: the same digest with a schema that would compile at once is not compiled.
    expect(await checks.check(B, 'union-3000', { type: 'object' }, { x: 1 })).toEqual(refused);
    expect(await checks.check(B, 'plain', { type: 'object', properties: { x: { type: 'string' } } }, { x: 1 })).toEqual({
      errors: [{ path: 'x', code: 'type', message: 'x must be string' }],
      omitted: 0,
    });
  });

  it("one organization's turn is one check's time, its compile included: not a compile's 2 s and then a check's", async () => {
    // A compile and a check of about the same cost, measured here first. The machine's load changes
    // both between the measure and the turn: tried up to three times, each measured afresh.
    const schema = { type: 'object', properties: { x: { type: 'array', items: { anyOf: [{ const: 1 }, { const: 2 }] } }, y: union(800).properties.x } };
    const args = { x: new Array<number>(1_200_000).fill(2), y: 1 };
    const timed = async (checks: VendorSchemaChecks, digest: string) => {
      const start = performance.now();
      return { answer: await checks.check(A, digest, schema, args), ms: performance.now() - start };
    };
    const answers: unknown[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const measuring = checksWith({ checkMs: 120_000 });
      await measuring.check(A, 'plain', { type: 'object' }, {});
      const both = await timed(measuring, `both-${attempt}`);
      const checkOnly = await timed(measuring, `both-${attempt}`);
      expect([both.answer, checkOnly.answer]).toEqual([
        { errors: [], omitted: 0 },
        { errors: [], omitted: 0 },
      ]);
      const limit = Math.ceil(0.75 * both.ms);
      // Each within the limit, both together past it.
      if (both.ms - checkOnly.ms >= limit || checkOnly.ms >= limit) continue;
      const checks = checksWith({ checkMs: limit });
      await checks.check(A, 'plain', { type: 'object' }, {});
      const turn = (await timed(checks, `both-${attempt}`)).answer;
      answers.push(turn);
      // Not refused, or the compile alone ran out (the machine's load grew since the measure): measured again.
      if (!('unusable' in turn) || turn.unusable.startsWith('compiling it takes')) continue;
      // Was answered `[]`, the turn taking both.
      expect(turn).toEqual({ unusable: `compiling it and checking these arguments against it take more than ${limit} ms` });
      // The compile is not blamed: compiled again (the thread was ended) for arguments quick to check.
      // A loaded machine may take the compile alone (or with this small check) past the limit: then
      // it was tried for the whole limit, where a remembered refusal answers at once.
      const start = performance.now();
      const again = await checks.check(A, `both-${attempt}`, schema, { x: [1], y: 1 });
      if ('unusable' in again) {
        const took = performance.now() - start;
        expect([again.unusable, took >= limit]).toEqual([
          expect.stringMatching(new RegExp(`^compiling it (takes|and checking these arguments against it take) more than ${limit} ms$`)),
          true,
        ]);
      } else expect(again).toEqual({ errors: [], omitted: 0 });
      return;
    }
    throw new Error(`no turn of both was refused: ${JSON.stringify(answers)}`);
  });

  it("a schema that compiles in no time is checked on the node's thread after its first call: not behind another organization's costly compile", async () => {
    // Its compile is measured on the thread: a loaded machine must not make it look costly here.
    const checks = checksWith({ checkMs: 120_000, inlineCompileMs: 1000 });
    const plain = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(await checks.check(B, 'plain', plain, { n: 1 })).toEqual({ errors: [], omitted: 0 });
    const order: string[] = [];
    const costly = checks.check(A, 'union-1000', union(1000), { x: 1 }).then(() => void order.push('costly'));
    await new Promise((resolve) => setImmediate(resolve));
    const cheap = checks.check(B, 'plain', plain, { n: 'x' }).then((answer) => (order.push('cheap'), answer));
    expect(await cheap).toEqual({ errors: [{ path: 'n', code: 'type', message: 'n must be integer' }], omitted: 0 });
    await costly;
    expect(order).toEqual(['cheap', 'costly']);
  });

  it('arguments the few steps on the node do not decide are checked on the thread, in full', async () => {
    const checks = checksWith({ checkMs: 120_000 });
    const integers = { type: 'object', additionalProperties: { type: 'integer' } };
    expect(await checks.check(A, 'integers', integers, { a: 1 })).toEqual({ errors: [], omitted: 0 });
    const wrong = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 'x']));
    expect(await checks.check(A, 'integers', integers, wrong)).toEqual({
      errors: expect.arrayContaining([{ path: 'k4', code: 'type', message: 'k4 must be integer' }]),
      omitted: 4950,
    });
    const right = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    expect(await checks.check(A, 'integers', integers, right)).toEqual({ errors: [], omitted: 0 });
  });

  it("organizations take turns: another's check is answered before the second of one that sent many", async () => {
    const checks = checksWith({ checkMs: 120_000 });
    const order: string[] = [];
    const of = (org: string, name: string, branches: number) => checks.check(org, name, union(branches), { x: 1 }).then(() => void order.push(name));
    const first = of(A, 'a1', 700);
    const rest = [of(A, 'a2', 701), of(A, 'a3', 702)];
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([first, ...rest, of(B, 'b1', 703)]);
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it("past the checks an organization may have waiting on a node, its next is 429 and the others' are checked", async () => {
    const checks = checksWith({ checkMs: 120_000, waitingPerOrg: 1 });
    const running = checks.check(A, 'u1', union(600), { x: 1 });
    const waiting = checks.check(A, 'u2', union(601), { x: 1 });
    await expect(checks.check(A, 'u3', union(602), { x: 1 })).rejects.toEqual(expect.objectContaining({ code: 'rate_limited', status: 429 }));
    await expect(checks.check(A, 'u3', union(602), { x: 1 })).rejects.toBeInstanceOf(ApiError);
    expect(await checks.check(B, 'u4', union(603), { x: 1 })).toEqual({ errors: [], omitted: 0 });
    expect(await Promise.all([running, waiting])).toEqual([
      { errors: [], omitted: 0 },
      { errors: [], omitted: 0 },
    ]);
  });
  it("a thread that runs out of memory holding one organization's schemas does not get another's ordinary schema refused", async () => {
    const checks = checksWith({ checkMs: 120_000, heapMb: 96 });
    /** A schema whose `default` the thread keeps with its validator: rows of about 60 bytes of heap each. */
    const carrying = (rows: number, n: number) => ({
      type: 'object',
      properties: { x: { type: 'integer' } },
      default: Array.from({ length: rows }, (_, k) => ({ n, k, s: `v${k}` })),
    });
    const answers: Awaited<ReturnType<VendorSchemaChecks['check']>>[] = [];
    // A's validators fill the thread's heap; B's compile, the larger allocation, is the one that passes it.
    for (let n = 0; n < 40; n++) {
      await checks.check(A, `kept-${n}`, carrying(8000, n), { x: 1 });
      answers.push(await checks.check(B, `ordinary-${n}`, carrying(20_000, n), { x: 1 }));
    }
    // Was `compiling it takes more than 96 MB of memory`, and the digest refused again without a compile.
    expect(answers.filter((a) => !('errors' in a))).toEqual([]);
  });
  it("a check under way when the node shuts down is 503, as one that waits: the thread's end is no failure of the server", async () => {
    const checks = new VendorSchemaChecks({ checkMs: 120_000 });
    expect(await checks.check(B, 'plain', { type: 'object' }, {})).toEqual({ errors: [], omitted: 0 });
    const underWay = checks.check(A, 'union-2500', union(2500), { x: 1 }).catch((err: unknown) => err);
    const waiting = checks.check(A, 'union-5', union(5), { x: 1 }).catch((err: unknown) => err);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await checks.onModuleDestroy();
    const unavailable = expect.objectContaining({ code: 'service_unavailable', status: 503 });
    // Was `Error: Terminating worker thread`, answered 500.
    expect(await underWay).toEqual(unavailable);
    expect(await waiting).toEqual(unavailable);
  });
});
