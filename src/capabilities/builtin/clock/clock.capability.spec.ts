import { TestingModule } from '@nestjs/testing';
import { buildContext } from '../../../../test/fixtures/build-context';
import { bootRegistry } from '../../../../test/support/capability-registry';
import { CapabilityRegistry } from '../../capability-registry.service';
import { currentDateTime } from './clock.capability';
import { ClockCapabilityModule } from './clock.module';

describe('clock capability', () => {
  let moduleRef: TestingModule;
  let registry: CapabilityRegistry;
  beforeAll(async () => {
    ({ registry, moduleRef } = await bootRegistry([ClockCapabilityModule]));
  });
  afterAll(() => moduleRef.close());

  const instant = new Date('2026-01-15T23:34:56Z');

  it('states the date and time in the zone, with its offset', () => {
    expect(currentDateTime(instant, 'UTC')).toBe('Current date and time: Thursday 2026-01-15 23:34 in UTC (UTC+00:00).');
    expect(currentDateTime(instant, 'Europe/Paris')).toBe('Current date and time: Friday 2026-01-16 00:34 in Europe/Paris (UTC+01:00).');
    expect(currentDateTime(instant, 'Asia/Kolkata')).toBe('Current date and time: Friday 2026-01-16 05:04 in Asia/Kolkata (UTC+05:30).');
    expect(currentDateTime(instant, 'America/New_York')).toBe('Current date and time: Thursday 2026-01-15 18:34 in America/New_York (UTC-05:00).');
    expect(currentDateTime(new Date('2026-07-01T12:00:00Z'), 'America/New_York')).toContain('08:00 in America/New_York (UTC-04:00)');
  });

  it("makes a zone's formatter once, not at every build (each of a page of 200 versions builds)", () => {
    const made = jest.spyOn(Intl, 'DateTimeFormat');
    try {
      for (let i = 0; i < 100; i++) currentDateTime(instant, 'Asia/Tokyo');
      expect(made.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      made.mockRestore();
    }
  });

  it('keeps a formatter per spelling of a zone, however many spellings come', () => {
    // 1,100 letter cases of one zone, each its own entry: past 1,000 the formatters are forgotten and made again.
    const letters = (n: number) => {
      let bit = 0;
      return [...'europe/paris'].map((c) => (c !== '/' && (n >> bit++) & 1 ? c.toUpperCase() : c)).join('');
    };
    const spellings = Array.from({ length: 1100 }, (_, n) => letters(n));
    expect(new Set(spellings).size).toBe(1100);
    for (const zone of [...spellings, ...spellings.slice(0, 3)]) {
      expect(currentDateTime(instant, zone)).toBe(`Current date and time: Friday 2026-01-16 00:34 in ${zone} (UTC+01:00).`);
    }
  });

  it('defaults to UTC and refuses what is not an IANA zone', () => {
    expect(registry.validateConfig('clock', {})).toEqual({ value: { timezone: 'UTC' }, errors: [] });
    expect(registry.validateConfig('clock', { timezone: 'Europe/Paris' })).toEqual({ value: { timezone: 'Europe/Paris' }, errors: [] });
    for (const timezone of ['Mars/Olympus_Mons', 'Paris', 'UTC+1', '', 42]) {
      const { errors } = registry.validateConfig('clock', { timezone });
      expect([...new Set(errors.map((e) => e.path))]).toEqual(['timezone']);
    }
    expect(registry.validateConfig('clock', { timezone: 'Mars/Olympus_Mons' }).errors[0]).toEqual({
      path: 'timezone',
      code: 'isTimeZone',
      message: 'timezone must be an IANA time zone such as Europe/Paris',
    });
  });

  it('contributes the time as of the build as prompt text, and no tools', async () => {
    jest.useFakeTimers({ now: instant, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    try {
      const built = await registry.build('clock', buildContext({ timezone: 'Asia/Tokyo' }));
      expect(built).toEqual({ capabilityId: 'clock', tools: [], prompt: 'Current date and time: Friday 2026-01-16 08:34 in Asia/Tokyo (UTC+09:00).' });
    } finally {
      jest.useRealTimers();
    }
  });
});
