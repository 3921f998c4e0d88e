import { Injectable } from '@nestjs/common';
import { Capability } from '../../capability.decorator';
import type { BuildContext, CapabilityContribution, CapabilityProvider } from '../../capability.types';
import { ClockConfig } from './clock.config';

@Capability({
  id: 'clock',
  name: 'Clock',
  category: 'context',
  description: 'Tells the agent the current date and time in the time zone you choose, so it never has to guess what "today" is.',
  tools: [],
  configSchema: ClockConfig,
  tags: ['time', 'context'],
  promptGuidance: 'The current date and time, in the configured time zone, are stated at the top of the prompt when the agent is built.',
})
@Injectable()
export class ClockCapability implements CapabilityProvider<ClockConfig> {
  build(ctx: BuildContext<ClockConfig>): CapabilityContribution {
    return { prompt: currentDateTime(new Date(), ctx.config.timezone) };
  }
}

/**
 * Formatters by the zone's spelling as configured: making one costs ICU about 80 µs, as much as the
 * rest of a build, and a page of 200 versions listed with their drift builds each one (attack
 * round 11, G-F6). Forgotten all at once past MAX_FORMATS spellings (a zone may be spelled in any
 * letter case, so their number is bounded by what versions hold, not by the zones).
 */
const formats = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATS = 1000;

function formatIn(timeZone: string): Intl.DateTimeFormat {
  let format = formats.get(timeZone);
  if (!format) {
    if (formats.size >= MAX_FORMATS) formats.clear();
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    });
    formats.set(timeZone, format);
  }
  return format;
}

/** `Current date and time: Monday 2026-11-30 06:08 in Europe/Paris (UTC+01:00).` */
export function currentDateTime(now: Date, timeZone: string): string {
  const part = Object.fromEntries(
    formatIn(timeZone)
      .formatToParts(now)
      .map((p) => [p.type, p.value]),
  );
  // ICU writes zero offsets as "GMT" or "GMT+00:00" depending on its version.
  const offset = part.timeZoneName.replace(/^GMT$/, 'GMT+00:00').replace('GMT', '');
  return `Current date and time: ${part.weekday} ${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute} in ${timeZone} (UTC${offset}).`;
}
