import check from './vendor-schema.worker';
import { WORK_FLOOR, WORK_PER_VALUE } from './vendor-schema';

/**
 * The thread's function, called here in this process: what crosses to a thread is a copy, so what
 * it reads of the arguments and writes to the console is seen only here.
 */
describe('the vendor schema thread', () => {
  const compiled = (digest: string, schema: Record<string, unknown>) => expect(check({ digest, schema })).toEqual({ compiled: true, ms: expect.any(Number) });

  it('asks for a schema it has not compiled, and checks against the one it has', () => {
    expect(check({ digest: 'never-sent', args: {} })).toEqual({ missing: true });
    compiled('named', { type: 'object', properties: { n: { type: 'integer' } } });
    expect(check({ digest: 'named', args: { n: 1 } })).toEqual({ errors: [], omitted: 0 });
    expect(check({ digest: 'named', args: { n: 'x' } })).toEqual({
      errors: [{ path: 'n', code: 'type', message: 'n must be integer' }],
      omitted: 0,
    });
  });

  it('answers at most 50 errors and how many more there were', () => {
    compiled('many', { type: 'object', additionalProperties: { type: 'integer' } });
    const answer = check({ digest: 'many', args: Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`k${i}`, 'x'])) });
    expect(answer).toEqual({ errors: expect.any(Array), omitted: 70 });
    expect((answer as { errors: unknown[] }).errors).toHaveLength(50);
  });

  it('counts the turns of loops too: a multiplied definition that walks every property reads the arguments a bounded number of times', () => {
    const defs: Record<string, unknown> = { d0: { type: 'object', additionalProperties: { type: 'string', minLength: 1 } } };
    for (let i = 1; i <= 20; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/definitions/d${i - 1}` }, { $ref: `#/definitions/d${i - 1}` }] };
    compiled('walking', { type: 'object', definitions: defs, allOf: [{ $ref: '#/definitions/d20' }] });
    const values = 200;
    let reads = 0;
    const args = new Proxy(Object.fromEntries(Array.from({ length: values }, (_, i) => [`k${i}`, 'v'])), {
      get: (target, key) => (reads++, Reflect.get(target, key)),
    });
    expect(check({ digest: 'walking', args })).toEqual({ unusable: expect.stringMatching(/takes more than/) });
    // Each read is a turn of a loop or an entry of a function, and those are what the budget counts.
    expect(reads).toBeLessThan(2 * (WORK_FLOOR + WORK_PER_VALUE * (values + 1)));
  });

  it('a schema Ajv cannot compile is refused without its generated code written to the console', () => {
    const written = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const logged = jest.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      // Refused once Ajv has written its code (`$async`); a union nested past V8's parser is refused at the same point.
      const schema = { $async: true, type: 'object', properties: { x: { anyOf: Array.from({ length: 300 }, (_, i) => ({ const: i + 1 })) } } };
      expect(check({ digest: 'async', schema })).toEqual({ unusable: expect.stringMatching(/asynchronous schemas/) });
      expect(check({ digest: 'async', args: { x: 1 } })).toEqual({ unusable: expect.stringMatching(/asynchronous schemas/) });
      expect([written.mock.calls.length, logged.mock.calls.length]).toEqual([0, 0]);
    } finally {
      written.mockRestore();
      logged.mockRestore();
    }
  });
});
