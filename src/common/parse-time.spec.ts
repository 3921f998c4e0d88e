import type { FastifyRequest } from 'fastify';
import { ParseTime } from './parse-time';

describe('ParseTime: an owner’s share of the time bodies take to parse (attack round 15, R-F4)', () => {
  let clock = 0;
  const now = () => clock;

  it('lets an owner past its burst read no body until its bucket drains, and others meanwhile', () => {
    clock = 0;
    const t = new ParseTime(250, now);
    t.charge('org:a', 400);
    expect(t.over('org:a')).toBe(false);
    t.charge('org:a', 400);
    expect(t.over('org:a')).toBe(true);
    expect(t.over('org:b')).toBe(false);
    // 800 ms spent, a burst of 500: 300 ms of debt drains at 250 ms a second.
    clock += 1000;
    expect(t.over('org:a')).toBe(true);
    clock += 300;
    expect(t.over('org:a')).toBe(false);
  });

  it('charges the parse of a request to the owner it was given, a parse that throws too; the platform and unowned requests to no one', () => {
    let step = 0;
    const t = new ParseTime(10, () => (step += 30));
    const request = {} as FastifyRequest;
    t.own(request, 'org:a');
    expect(t.parse(request, '{"a":1}')).toEqual({ a: 1 });
    expect(() => t.parse(request, '{')).toThrow(SyntaxError);
    expect(t.over('org:a')).toBe(true);
    const platform = {} as FastifyRequest;
    t.own(platform, 'platform');
    for (let i = 0; i < 10; i++) t.parse(platform, '[]');
    expect(t.over('platform')).toBe(false);
  });

  it('is off at 0', () => {
    clock = 0;
    const t = new ParseTime(0, now);
    t.charge('org:a', 1_000_000);
    expect(t.over('org:a')).toBe(false);
  });
});
