import { ConfigError } from './config/app-config';
import { startFailureLine } from './server';

describe('a failed start', () => {
  it('is one fatal JSON line naming the operator mistake, without a stack', () => {
    const line = startFailureLine(new ConfigError('Invalid environment:\n  PORT: must not be greater than 65535 (got 70000)'), 1);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(line)).toEqual({ level: 60, time: 1, msg: 'cannot start: Invalid environment:\n  PORT: must not be greater than 65535 (got 70000)' });
  });

  it('carries an unexpected error with its type and stack', () => {
    const parsed = JSON.parse(startFailureLine(new TypeError('boom')));
    expect(parsed).toMatchObject({ level: 60, msg: 'cannot start: boom', err: { type: 'TypeError', message: 'boom' } });
    expect(parsed.err.stack).toContain('TypeError: boom');
  });

  it('is JSON for a thrown value that is not an Error', () => {
    expect(JSON.parse(startFailureLine('nope'))).toMatchObject({ level: 60, msg: 'cannot start: nope' });
  });
});
